package launch

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
)

// TestLiveDemo runs the live demo for a bounded time with fast settings
// (10 s windows, EARLY every second, 30 s of allowed lateness) and checks
// what a user is meant to see: at least one window whose changelog goes
// EARLY → ON_TIME → LATE → FINAL, no changelog going backwards, too-late,
// conflict and quarantine rows in the audit tables (as many as the job
// counted), every partition read, and conservation at the stop.
func TestLiveDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the live demo runs for a minute")
	}
	db := filepath.Join(t.TempDir(), "live.db")
	o, err := Parse([]string{"--demo=live", "--duration=65s", "--window=10s", "--early=1s", "--allowed-lateness=30s",
		"--ooo-bound=2s", "--idle-timeout=4s", "--sink=sqlite:" + db})
	if err != nil {
		t.Fatal(err)
	}
	o.LiveDir = filepath.Join(t.TempDir(), "demo-live")
	var out bytes.Buffer
	sum, err := Run(context.Background(), o, &out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	t.Logf("summary:\n%s", out.String())
	if !strings.Contains(out.String(), "Live demo: 4 partitions") || !strings.Contains(out.String(), "window 10s · early 1s · allowed-lateness 30s") {
		t.Errorf("no banner with the settings:\n%s", out.String())
	}
	if sum.State != StateCancelled || !sum.Conserved {
		t.Errorf("state %s, conserved %v: %s", sum.State, sum.Conserved, sum.Identity)
	}
	c := sum.Counts
	if got := slices.Sorted(maps.Keys(c.ReadBy)); !slices.Equal(got, []string{"p0", "p1", "p2", "p3"}) {
		t.Errorf("partitions read: %v", c.ReadBy)
	}

	sink := sqliteOf(t, Options{Sink: o.Sink})
	changelog, err := sink.Changelog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkMonotone(t, changelog)
	lifecycles := map[string][]string{}
	for _, r := range changelog {
		states := lifecycles[r.Key()]
		if len(states) == 0 || states[len(states)-1] != r.State.String() {
			lifecycles[r.Key()] = append(states, r.State.String())
		}
	}
	var full []string
	for key, states := range lifecycles {
		if slices.Equal(states, []string{"EARLY", "ON_TIME", "LATE", "FINAL"}) {
			full = append(full, key)
		}
	}
	if len(full) == 0 {
		var all []string
		for key, states := range lifecycles {
			all = append(all, key+": "+strings.Join(states, " → "))
		}
		slices.Sort(all)
		t.Errorf("no window went EARLY → ON_TIME → LATE → FINAL:\n%s", strings.Join(all, "\n"))
	}
	t.Logf("%d windows went EARLY → ON_TIME → LATE → FINAL: %v", len(full), full)

	late, err := sink.TooLate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conflicts, err := sink.Conflicts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	quarantined, err := sink.Quarantined(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		table   string
		rows    int
		counted int64
	}{{"too_late_events", len(late), c.TooLate}, {"conflict_events", len(conflicts), c.Conflicts}, {"quarantined_events", len(quarantined), c.Quarantined}} {
		if a.rows == 0 || int64(a.rows) != a.counted {
			t.Errorf("%s holds %d rows; the job counted %d (want as many, and some)", a.table, a.rows, a.counted)
		}
	}
	for _, r := range late {
		if r.Reason != model.ReasonWindowClosed {
			t.Errorf("too-late row %s: reason %q", r.Position, r.Reason)
		}
	}
	if c.Duplicates == 0 || c.Rows["LATE"] == 0 || c.Rows["FINAL"] == 0 {
		t.Errorf("duplicates %d, LATE rows %d, FINAL rows %d: want some of each", c.Duplicates, c.Rows["LATE"], c.Rows["FINAL"])
	}
}

// TestLiveDemoFlags checks the live demo's defaults and that a flag given
// wins over them.
func TestLiveDemoFlags(t *testing.T) {
	o, err := Parse([]string{"--demo=live", "--early=2s", "--ui=8080", "--duration=5m"})
	if err != nil {
		t.Fatal(err)
	}
	p := o.Pipeline
	got := fmt.Sprintln(o.Sink, p.Triggers.Window, p.Triggers.Early, p.Triggers.AllowedLateness, p.Watermark.OutOfOrderBound,
		p.Watermark.IdleTimeout, o.Duration, o.UI)
	if want := "sqlite:demo-live.db 1m0s 2s 3m0s 10s 30s 5m0s 8080\n"; got != want {
		t.Errorf("live demo settings = %s want %s", got, want)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("the live demo's defaults are refused: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--demo=soon"}, `launch: --demo: "soon": want replay or live`},
		{[]string{"--demo=live", "--source=."}, `launch: --demo=live writes its own source folder (./demo-live): it takes no --source`},
		{[]string{"--demo=live", "--allowed-lateness=30s"}, `launch: --demo=live: live feed: --allowed-lateness 30s leaves no room for late uploads: it must exceed window + 3 x ooo-bound (1m30s)`},
		{[]string{"--duration=1m"}, `launch: --duration stops a streaming run (--follow, Pub/Sub or --demo=live); a replay ends by itself`},
		{[]string{"--demo=live", "--duration=-1s"}, `launch: --duration must not be negative, got -1s`},
		{[]string{"--demo=live", "--ui=70000"}, `launch: --ui=70000: invalid port: want 1 to 65535`},
		{[]string{"--demo=live", "--ui=host"}, `launch: --ui=host: want PORT or HOST:PORT`},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(tc.args, &stdout, &stderr)
		if code != ExitUsage || stderr.String() != tc.want+"\n" || stdout.Len() != 0 {
			t.Errorf("launch %s: exit %d, stderr %q\nwant exit 2, stderr %q", strings.Join(tc.args, " "), code, stderr.String(), tc.want+"\n")
		}
	}
}

// TestLiveDirOwnership checks that the live demo empties only a folder it
// made.
func TestLiveDirOwnership(t *testing.T) {
	o := Defaults()
	feed, err := o.liveFeed(o.Pipeline.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "live")
	if err := prepareLiveDir(dir, feed); err != nil {
		t.Fatal(err)
	}
	appendFile(t, dir, "old.jsonl", "{}")
	if err := prepareLiveDir(dir, feed); err != nil {
		t.Fatal(err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "p*", "*")); len(files) != 0 {
		t.Errorf("the live folder was not emptied: %v", files)
	}
	other := t.TempDir()
	if err := prepareLiveDir(other, feed); err == nil || !strings.Contains(err.Error(), "was not made by the live demo") {
		t.Errorf("a foreign folder: %v", err)
	}
}
