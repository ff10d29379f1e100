package advise

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/testing/gcstest"
	"github.com/revenue-stream/hourly/testing/s3test"
)

// TestBadFlags: every refusal is one line on stderr and exit 2, before any
// work (no source is read: the folder does not exist for most).
func TestBadFlags(t *testing.T) {
	dir, _ := writeGenLog(t, genConfig{start: genStart, partitions: 1, step: time.Minute, slots: 30, silent: -1})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--source is required"},
		{[]string{"--source=" + dir, "--ooo-bound=ten"}, `--ooo-bound: invalid duration "ten"`},
		{[]string{"--source=" + dir, "--target-late-share=1"}, "want a percentage"},
		{[]string{"--source=" + dir, "--target-late-share=101%"}, "want a percentage"},
		{[]string{"--source=" + dir, "--try-ooo-bound=1m,x"}, `invalid duration "x"`},
		{[]string{"--source=" + dir, "--try-idle-timeout=0s"}, "--try-idle-timeout: 0s is not a usable value"},
		{[]string{"--source=" + dir, "--dedup-retention=2h"}, "shorter than window + allowed lateness"},
		{[]string{"--source=" + dir, "--window=7m"}, "--window must divide 24h"},
		{[]string{"--source=" + dir, "--arrival-field=event_time"}, "--arrival-field"},
		{[]string{"--source=" + dir, "--report=advice.pdf"}, "--report"},
		{[]string{"--source=" + dir, "--job-report=run.html"}, "--job-report"},
		{[]string{"--source=" + dir, "--from=2026-11-04T10:30:00Z"}, "not a whole UTC hour"},
		{[]string{"--source=" + dir, "--idle-advance=sometimes"}, "--idle-advance"},
		{[]string{"--source=" + dir, "extra"}, `unexpected argument "extra"`},
		{[]string{"--source=" + filepath.Join(dir, "missing")}, "no such folder"},
		{[]string{"--source=" + dir, "--arrival-field=sent_at"}, "no record has an arrival instant (no readable --arrival-field=sent_at)"},
	} {
		var out, errb bytes.Buffer
		code := Main(tc.args, &out, &errb)
		line := errb.String()
		if code != ExitError || strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "advise: ") || !strings.Contains(line, tc.want) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %d bytes; want exit 2 and one line with %q", tc.args, code, line, out.Len(), tc.want)
		}
	}
	var out, errb bytes.Buffer
	code := Main([]string{"--help"}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "--target-late-share") || !strings.Contains(out.String(), "out-of-order bound (default 10m)") {
		t.Errorf("--help: exit %d, stdout:\n%s", code, out.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.Count(l, "(default") > 1 {
			t.Errorf("--help gives a default twice: %q", l)
		}
	}
}

// TestReportForms writes the advice in every form and reads the JSON back.
func TestReportForms(t *testing.T) {
	dir, _ := writeGenLog(t, genConfig{start: genStart, partitions: 2, step: 30 * time.Second, slots: 600, silent: -1, copies: true})
	o := Defaults()
	o.Source, o.ArrivalField, o.Now = dir, "received_at", genStart.Add(30*24*time.Hour)
	out := t.TempDir()
	for _, ext := range []string{".json", ".md", ".html"} {
		o.Report = filepath.Join(out, "advice"+ext)
		var stdout bytes.Buffer
		if _, err := Run(context.Background(), o, &stdout); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(o.Report)
		if err != nil {
			t.Fatal(err)
		}
		switch ext {
		case ".json":
			var doc struct {
				Advice struct {
					Sections []report.AdviceSection `json:"sections"`
					TradeOff []report.TradeOffPoint `json:"trade_off"`
					Figures  Advice                 `json:"figures"`
				} `json:"advice"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			a := doc.Advice
			if len(a.Sections) != 6 || len(a.TradeOff) == 0 || len(a.Figures.Bounds) != len(a.TradeOff) || len(a.Figures.Recommendation.Flags) < 4 {
				t.Errorf("json: %d sections, %d trade-off points, %d bounds, flags %v", len(a.Sections), len(a.TradeOff), len(a.Figures.Bounds), a.Figures.Recommendation.Flags)
			}
			if b := a.Figures.Bounds[0]; b.Bound != Duration(time.Minute) || b.Fates.Total().Events == 0 {
				t.Errorf("json: first bound %+v", b)
			}
		case ".md":
			for _, want := range []string{"## Out-of-order bound (--ooo-bound)", "| bound | on time |", "**10m** (current)", "go run ./cmd/launch --ooo-bound="} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("md: no %q", want)
				}
			}
		case ".html":
			for _, want := range []string{"<h2>Idle timeout (--idle-timeout)</h2>", `<polyline class="tl" points="`, `class="pt cur"`, "(current)</td>", "go run ./cmd/launch"} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("html: no %q", want)
				}
			}
		}
		// The summary is the text form of the same sections.
		if !strings.Contains(stdout.String(), "Recommendation (targets: late ≤ 1%") {
			t.Errorf("summary:\n%s", stdout.String())
		}
	}
}

// TestFilesystemsAndArchive: a raw log in a GCS bucket (fake-gcs-server)
// and in an S3 bucket (gofakes3), read through Beam's filesystems as
// production reads them, gives the same advice as on disk, and a Pub/Sub
// archive's sidecars are its arrival clock.
func TestFilesystemsAndArchive(t *testing.T) {
	dir, recs := writeGenLog(t, genConfig{start: genStart, partitions: 2, step: 30 * time.Second, slots: 400, silent: -1, copies: true})
	o := Defaults()
	o.Source, o.ArrivalField, o.Now = dir, "received_at", genStart.Add(30*24*time.Hour)
	local, err := Analyze(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	gs := gcstest.NewBucket(t) + "/raw"
	gcstest.Upload(t, dir, gs)
	s3 := s3test.NewBucket(t) + "/raw"
	s3test.Upload(t, dir, s3)
	for _, src := range []string{gs, s3} {
		o.Source = src
		remote, err := Analyze(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		remote.Log.Source = local.Log.Source
		same(t, src+" log", remote.Log, local.Log)
		same(t, src+" bounds", remote.Bounds, local.Bounds)
		same(t, src+" recommendation", remote.Recommendation, local.Recommendation)
	}

	// The same records as a Pub/Sub archive: partitions pubsub and
	// pubsub-01, each object with its sidecar of "<id>\t<publish ms>".
	arch := filepath.Join(t.TempDir(), "archive")
	for p, name := range []string{"pubsub", "pubsub-01"} {
		var lines, side []string
		for i, r := range recs {
			if r.part == p {
				lines = append(lines, stripArrival(r.line))
				side = append(side, fmt.Sprintf("m%d\t%d", i, r.at))
			}
		}
		d := filepath.Join(arch, name)
		os.MkdirAll(d, 0o755)
		obj := "2026-11-04T00-000000000001-abc.jsonl"
		os.WriteFile(filepath.Join(d, obj), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "."+obj+".ids"), []byte(strings.Join(side, "\n")+"\n"), 0o644)
	}
	o.Source, o.ArrivalField = arch, ""
	pub, err := Analyze(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if pub.Log.Clock != PublishClock.String() {
		t.Fatalf("archive clock %q", pub.Log.Clock)
	}
	// Publish times are the arrivals the field held: the same figures
	// (the malformed lines have a publish time here, unlike a field).
	same(t, "archive bounds", pub.Bounds[0].Fates, local.Bounds[0].Fates)
	same(t, "archive recommendation", pub.Recommendation.Flags, local.Recommendation.Flags)
}

func stripArrival(line string) string {
	if i := strings.Index(line, `,"received_at":`); i >= 0 {
		return line[:i] + "}"
	}
	return line
}
