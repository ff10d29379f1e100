package jsonl

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// readJSONL returns a file's lines with written_at values blanked.
func readJSONL(t *testing.T, dir, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`"written_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"`).ReplaceAllString(string(data), `"written_at":"W"`)
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("%s does not end with a newline", name)
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func wantLines(t *testing.T, name string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestJSONL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := sinktest.AuditBatch(t)
	b.Rows = []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 2, model.Late, 3, 170_000_000),
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 1, model.OnTime, 2, 150_000_000),
	}
	res, err := j.Write(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantResult(t, res, sink.Result{Accepted: 2, AuditInserted: 4})
	// A replay in the same process, plus a stale revision.
	res, err = j.Write(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantResult(t, res, sink.Result{Stale: 2})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// A restarted process still rejects what the files hold, and the no-dip
	// rule applies to what it read back.
	j, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, err = j.Write(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantResult(t, res, sink.Result{Stale: 2})
	res, err = j.Write(ctx, sink.Batch{Rows: []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 3, model.Late, 2, 1), // count falls
		sinktest.ReconcileRow(sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 3, model.Late, 2, 160_000_000)),
	}})
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantResult(t, res, sink.Result{Accepted: 1, Stale: 1})

	wantLines(t, ChangelogFile, readJSONL(t, dir, ChangelogFile), []string{
		`{"window_start":"2026-11-04T10:00:00Z","window_end":"2026-11-04T11:00:00Z","dims":"{}","revenue":"150.000000","revenue_micros":150000000,"event_count":2,"revision":1,"result_state":"ON_TIME","written_at":"W","writer":"stream"}`,
		`{"window_start":"2026-11-04T10:00:00Z","window_end":"2026-11-04T11:00:00Z","dims":"{}","revenue":"170.000000","revenue_micros":170000000,"event_count":3,"revision":2,"result_state":"LATE","written_at":"W","writer":"stream"}`,
		`{"window_start":"2026-11-04T10:00:00Z","window_end":"2026-11-04T11:00:00Z","dims":"{}","revenue":"160.000000","revenue_micros":160000000,"event_count":2,"revision":3,"result_state":"LATE","written_at":"W","writer":"reconcile:run1"}`,
	})
	wantLines(t, fileTooLate, readJSONL(t, dir, fileTooLate), []string{
		`{"source_position":"p0/f.jsonl:4","event_id":"d1","event_time":"2026-11-04T10:10:00Z","payload":"{\"event_id\":\"d1\",\"event_time\":\"2026-11-04T10:10:00Z\",\"user_id\":\"u1\",\"amount\":\"5\"}","reason":"window_closed"}`,
		`{"source_position":"p1/g.jsonl:9","event_id":"d2","event_time":"2026-11-04T10:10:00.250Z","payload":"{\"event_id\":\"d2\"}","reason":"window_closed"}`,
	})
	wantLines(t, fileConflicts, readJSONL(t, dir, fileConflicts), []string{
		`{"source_position":"p0/f.jsonl:5","event_id":"a1","first_fingerprint":"0123456789abcdef","conflicting_fingerprint":"fedcba9876543210","payload":"{\"event_id\":\"a1\",\"amount\":\"120\"}"}`,
	})
	wantLines(t, fileQuarantined, readJSONL(t, dir, fileQuarantined), []string{
		`{"source_position":"p0/f.jsonl:7","payload":"{not json","reason":"malformed_json"}`,
	})
}

func TestJSONLTornLastLine(t *testing.T) {
	dir := t.TempDir()
	line := `{"window_start":"2026-11-04T10:00:00Z","window_end":"2026-11-04T11:00:00Z","dims":"{}","revenue":"1.000000","revenue_micros":1000000,"event_count":1,"revision":4,"result_state":"LATE","written_at":"2026-11-04T11:00:01.000Z","writer":"stream"}`
	if err := os.WriteFile(filepath.Join(dir, ChangelogFile), []byte(line+"\n"+`{"window_sta`), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, err := j.Write(context.Background(), sink.Batch{Rows: []model.Row{
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 4, model.Late, 1, 1_000_000),
		sinktest.Snap(t, "2026-11-04T10:00:00Z", "{}", 5, model.Final, 1, 1_000_000),
	}})
	if err != nil {
		t.Fatal(err)
	}
	sinktest.WantResult(t, res, sink.Result{Accepted: 1, Stale: 1})
	lines := readJSONL(t, dir, ChangelogFile)
	if len(lines) != 3 || lines[1] != `{"window_sta` || !strings.Contains(lines[2], `"revision":5,"result_state":"FINAL"`) {
		t.Fatalf("lines after a torn tail:\n%s", strings.Join(lines, "\n"))
	}
}

func TestJSONLRunConfig(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	if err := j.CheckRunConfig(ctx, map[string]string{"window": "1h"}); err != nil {
		t.Fatal(err)
	}
	if err := j.CheckRunConfig(ctx, map[string]string{"window": "1h", "dimensions": "country"}); err != nil {
		t.Fatal(err)
	}
	err = j.CheckRunConfig(ctx, map[string]string{"window": "30m"})
	want := "sink " + dir + " was written with window=1h; this run has window=30m: its window_start keys would collide; use another sink"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}
