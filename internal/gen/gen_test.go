package gen

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// small is a quick log with every feature switched on.
func small() Config {
	c := Demo()
	c.Events = 5000
	c.MaxLine = 4096 // a small oversized line
	return c
}

// digest hashes every file of a log, names included.
func digest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestDeterministic(t *testing.T) {
	c := small()
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	sa, err := Write(a, c)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := Write(b, c)
	if err != nil {
		t.Fatal(err)
	}
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Fatalf("same Config, different logs: %s vs %s", da, db)
	}
	if fmt.Sprint(sa) != fmt.Sprint(sb) {
		t.Fatalf("same Config, different Stats:\n%+v\n%+v", sa, sb)
	}
	c.Seed++
	d := filepath.Join(t.TempDir(), "d")
	if _, err := Write(d, c); err != nil {
		t.Fatal(err)
	}
	if digest(t, a) == digest(t, d) {
		t.Fatal("different seeds gave the same log")
	}
}

func TestRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, small()); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("err = %v, want a refusal", err)
	}
}

func TestValidate(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"no partitions":          func(c *Config) { c.Partitions = 0 },
		"rate above 1":           func(c *Config) { c.DupRate = 1.5 },
		"NaN rate":               func(c *Config) { c.LateRate = math.NaN() },
		"late beyond lateness":   func(c *Config) { c.LateDelay[1] = 25 * time.Hour },
		"too-late within period": func(c *Config) { c.TooLateDelay[0] = 24 * time.Hour },
		"bad idle partition":     func(c *Config) { c.IdlePartition = 9 },
		"idle gap too long":      func(c *Config) { c.IdleGap = c.Span },
		"window not dividing 1d": func(c *Config) { c.Window = 7 * time.Hour },
	} {
		c := Demo()
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if c := Demo(); c.Validate() != nil {
		t.Errorf("%+v: %v", c, c.Validate())
	}
}

// line is what the test can tell about a line without the event package.
type line struct {
	blank     bool
	ok        bool // a well-formed event of the generator (not a bad_ line)
	id        string
	eventTime int64
}

func readLog(t *testing.T, dir string) (map[string][]line, int) {
	t.Helper()
	parts := map[string][]line{}
	files := 0
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ents {
		fents, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fents {
			if strings.HasPrefix(f.Name(), ".") {
				t.Errorf("temporary file left behind: %s/%s", p.Name(), f.Name())
			}
			files++
			b, err := os.ReadFile(filepath.Join(dir, p.Name(), f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > 0 && b[len(b)-1] != '\n' {
				t.Errorf("%s/%s does not end in a newline", p.Name(), f.Name())
			}
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<24)
			for sc.Scan() {
				parts[p.Name()] = append(parts[p.Name()], parseLine(t, sc.Bytes()))
			}
		}
	}
	return parts, files
}

func parseLine(t *testing.T, b []byte) line {
	b = bytes.TrimRight(b, "\r")
	if len(bytes.TrimSpace(b)) == 0 {
		return line{blank: true}
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return line{}
	}
	id, _ := m["event_id"].(string)
	if !strings.HasPrefix(id, "evt_") {
		return line{}
	}
	var ms int64
	switch v := m["event_time"].(type) {
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			t.Fatalf("event_time %v: %v", v, err)
		}
		ms = n
	case string:
		tm, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			t.Fatalf("event_time %q: %v", v, err)
		}
		ms = tm.UnixMilli()
	default:
		t.Fatalf("event_time of %s: %T", b, v)
	}
	return line{ok: true, id: id, eventTime: ms}
}

func TestStatsMatchFiles(t *testing.T) {
	c := small()
	dir := filepath.Join(t.TempDir(), "log")
	st, err := Write(dir, c)
	if err != nil {
		t.Fatal(err)
	}
	parts, files := readLog(t, dir)
	if files != st.Files || files != c.Partitions*c.FilesPerPartition {
		t.Errorf("files = %d, Stats.Files = %d, want %d", files, st.Files, c.Partitions*c.FilesPerPartition)
	}
	if len(parts) != c.Partitions || len(st.Partitions) != c.Partitions {
		t.Errorf("partitions = %d (%v), want %d", len(parts), st.Partitions, c.Partitions)
	}
	var lines, blank, good int
	ids := map[string]int{}
	behind := 0
	for _, ls := range parts {
		maxSeen := int64(-1 << 62)
		for _, l := range ls {
			lines++
			switch {
			case l.blank:
				blank++
			case l.ok:
				good++
				ids[l.id]++
				if l.eventTime < maxSeen-c.Disorder.Milliseconds() {
					behind++
				}
				maxSeen = max(maxSeen, l.eventTime)
			}
		}
	}
	if lines != st.Lines || blank != st.Blank {
		t.Errorf("lines = %d (blank %d), Stats say %d (blank %d)", lines, blank, st.Lines, st.Blank)
	}
	if len(ids) != st.Events || st.Events != c.Events {
		t.Errorf("distinct event ids = %d, Stats.Events = %d, want %d", len(ids), st.Events, c.Events)
	}
	if want := st.Events + st.Duplicates + st.Conflicts + st.TooLate - st.TooLateEvents; good != want {
		t.Errorf("event lines = %d, want %d from Stats %+v", good, want, st)
	}
	if bad := lines - blank - good; bad != st.Malformed {
		t.Errorf("malformed lines = %d, Stats.Malformed = %d", bad, st.Malformed)
	}
	// Mostly in event-time order: only late uploads, too-late events, the
	// idle partition's backlog and slow retries lag more than Disorder.
	if frac := float64(behind) / float64(good); frac > 0.06 {
		t.Errorf("%.1f%% of lines lag their partition by more than Disorder", 100*frac)
	}
	// Counts are random: allow four standard deviations (and the 3 events
	// of the missing window).
	rate := func(name string, got int, want float64) {
		mean := want * float64(c.Events)
		if slack := 4*math.Sqrt(mean) + 3; math.Abs(float64(got)-mean) > slack {
			t.Errorf("%s = %d, want %.0f ± %.0f", name, got, mean, slack)
		}
	}
	rate("Duplicates", st.Duplicates, c.DupRate)
	rate("Late", st.Late, c.LateRate)
	rate("TooLateEvents", st.TooLateEvents, c.TooLateRate)
	var counted, all int64
	for _, v := range st.Counted {
		counted += v.Count
	}
	for _, v := range st.All {
		all += v.Count
	}
	if counted != int64(st.Events-st.TooLateEvents) || all != int64(st.Events) {
		t.Errorf("window counts: counted %d all %d, want %d and %d", counted, all, st.Events-st.TooLateEvents, st.Events)
	}
}

func TestDemoHasEveryKind(t *testing.T) {
	if testing.Short() {
		t.Skip("writes the demo log")
	}
	c := Demo()
	st, err := Write(filepath.Join(t.TempDir(), "demo"), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range model.QuarantineReasons {
		if reason == model.ReasonTooOld {
			continue // needs --max-age, off by default
		}
		if st.MalformedKinds[reason] == 0 {
			t.Errorf("no %s line in the demo (kinds %v)", reason, st.MalformedKinds)
		}
	}
	if st.Duplicates == 0 || st.Conflicts == 0 || st.Late == 0 || st.TooLateEvents == 0 || st.Backlog == 0 || st.Blank == 0 {
		t.Errorf("a feature is missing from the demo: %+v", st)
	}
	if len(st.MissingWindows) != 1 {
		t.Fatalf("missing windows = %v, want one", st.MissingWindows)
	}
	w := st.MissingWindows[0]
	if _, ok := st.Counted[w]; ok {
		t.Errorf("missing window %s has counted events", model.FormatTime(w))
	}
	if st.All[w].Count < 3 {
		t.Errorf("missing window %s: All = %+v, want its 3 too-late events", model.FormatTime(w), st.All[w])
	}
}

func TestTinyLogs(t *testing.T) {
	for _, n := range []int{0, 1, 19} {
		c := small()
		c.Events = n
		st, err := Write(filepath.Join(t.TempDir(), "log"), c)
		if err != nil {
			t.Fatalf("%d events: %v", n, err)
		}
		if st.Events != n || st.Files != c.Partitions*c.FilesPerPartition {
			t.Errorf("%d events: stats %+v", n, st)
		}
	}
}

// The country draw (generator.country) takes a percent: the weights must sum
// to 100, or it runs off the table (less) or never reaches the last (more).
func TestCountryWeightsArePercent(t *testing.T) {
	sum := 0
	for _, c := range countries {
		sum += c.weight
	}
	if sum != 100 {
		t.Fatalf("country weights sum to %d, want 100", sum)
	}
}
