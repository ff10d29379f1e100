package transforms

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
)

// TestPayloadsReadBack reads audit payloads back by position, as the
// Payloads step does after the dedup step, checks that they are the
// records judged, and refuses a raw-log file that changed under the job or
// disappeared.
func TestPayloadsReadBack(t *testing.T) {
	cfg := event.DefaultConfig()
	dir := t.TempDir()
	a := `{"event_id":"A","event_time":"2026-11-04T10:05:00Z","user_id":"u1","amount":"120"}`
	d := `{"event_id":"D","event_time":"2026-11-04T10:10:00Z","user_id":"u2","amount":5}` + "\r"
	path := filepath.Join(dir, "000001.jsonl")
	if err := os.WriteFile(path, []byte(a+"\n\n"+d+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refA := model.LineRef{Path: path, Offset: 0, Length: len(a)}
	refD := model.LineRef{Path: path, Offset: int64(len(a)) + 2, Length: len(d) - 1} // content without its "\r"
	got, err := files.ReadRanges(context.Background(), []model.LineRef{refD, refA})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[0]) != strings.TrimSuffix(d, "\r") || string(got[1]) != a {
		t.Fatalf("payloads %q, want %q and %q", got, strings.TrimSuffix(d, "\r"), a)
	}
	ea, _ := event.Parse(model.Record{Line: []byte(a), ReadAt: 1 << 60}, cfg)
	fpA := func(e model.Event) bool { return e.Fingerprint == ea.Fingerprint }
	if err := checkPayload(got[1], cfg, "p0/000001.jsonl:1", refA, "A", fpA); err != nil {
		t.Fatalf("the payload read back is refused: %v", err)
	}

	// The file changed under the job: another amount at the same place.
	if err := os.WriteFile(path, []byte(strings.Replace(a, "120", "130", 1)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = files.ReadRanges(context.Background(), []model.LineRef{refA})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPayload(got[0], cfg, "p0/000001.jsonl:1", refA, "A", fpA); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("a changed line was accepted as the record's payload (error %v)", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := files.ReadRanges(context.Background(), []model.LineRef{refA}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a removed file: error %v, want fs.ErrNotExist", err)
	}
}

// TestPayloadFns runs the two steps as a runner does (elements, then the
// bundle's end): records that carry their payload pass through at once,
// the others get the raw log's bytes at FinishBundle, in the order they
// came; a record whose bytes are another event's (a conflict's other copy,
// a too-late record's other event time) fails the bundle.
func TestPayloadFns(t *testing.T) {
	ctx := context.Background()
	cfg := event.DefaultConfig()
	first := `{"event_id":"A","event_time":"2026-11-04T10:05:00Z","user_id":"u1","amount":"120"}`
	other := `{"event_id":"A","event_time":"2026-11-04T10:05:00Z","user_id":"u9","amount":"120"}`
	late := `{"event_id":"D","event_time":"2026-11-04T09:10:00Z","user_id":"u2","amount":"7"}`
	path := filepath.Join(t.TempDir(), "000001.jsonl")
	if err := os.WriteFile(path, []byte(first+"\n"+other+"\n"+late+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refOf := func(line string) model.LineRef {
		b, _ := os.ReadFile(path)
		return model.LineRef{Path: path, Offset: int64(strings.Index(string(b), line)), Length: len(line)}
	}
	parse := func(line string) model.Event {
		e, q := event.Parse(model.Record{Line: []byte(line), ReadAt: 1 << 60, WatermarkBefore: model.NoWatermark}, cfg)
		if q != nil {
			t.Fatalf("%s: %v", line, q)
		}
		return e
	}
	a, o, d := parse(first), parse(other), parse(late)

	cf := &payloadFn[model.Conflict]{Config: cfg}
	var conflicts []model.Conflict
	emitC := func(_ beam.EventTime, c model.Conflict) { conflicts = append(conflicts, c) }
	carried := model.Conflict{Position: "hand", EventID: "Z", Payload: []byte("{}")}
	cf.ProcessElement(ctx, 1, model.Conflict{Position: "p0/000001.jsonl:2", EventID: "A", FirstFingerprint: a.Fingerprint,
		ConflictingFingerprint: o.Fingerprint, Ref: refOf(other)}, emitC)
	cf.ProcessElement(ctx, 2, carried, emitC)
	if len(conflicts) != 1 || string(conflicts[0].Payload) != "{}" {
		t.Fatalf("before the bundle's end: %+v, want only the record that carries its payload", conflicts)
	}
	if err := cf.FinishBundle(ctx, emitC); err != nil {
		t.Fatal(err)
	}
	if len(conflicts) != 2 || string(conflicts[1].Payload) != other {
		t.Fatalf("conflicts %+v, want the other copy's payload %q read back", conflicts, other)
	}
	// The conflict's ref names the first copy's line: refused.
	cf.ProcessElement(ctx, 1, model.Conflict{Position: "p0/000001.jsonl:2", EventID: "A", ConflictingFingerprint: o.Fingerprint, Ref: refOf(first)}, emitC)
	if err := cf.FinishBundle(ctx, emitC); err == nil || !strings.Contains(err.Error(), "conflict_events") {
		t.Errorf("a conflict with the first copy's bytes: error %v", err)
	}

	lf := &payloadFn[model.TooLate]{Config: cfg}
	var lates []model.TooLate
	emitL := func(_ beam.EventTime, l model.TooLate) { lates = append(lates, l) }
	lf.ProcessElement(ctx, 1, model.TooLate{Position: "p0/000001.jsonl:3", EventID: "D", EventTime: d.EventTime,
		Reason: model.ReasonWindowClosed, Ref: refOf(late)}, emitL)
	if err := lf.FinishBundle(ctx, emitL); err != nil {
		t.Fatal(err)
	}
	if len(lates) != 1 || string(lates[0].Payload) != late {
		t.Fatalf("too late %+v, want payload %q", lates, late)
	}
	lf.ProcessElement(ctx, 1, model.TooLate{Position: "p0/000001.jsonl:3", EventID: "D", EventTime: d.EventTime + 1, Ref: refOf(late)}, emitL)
	if err := lf.FinishBundle(ctx, emitL); err == nil || !strings.Contains(err.Error(), "too_late_events") {
		t.Errorf("a too-late record of another event time: error %v", err)
	}
}
