package transforms

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func TestWindowsToArm(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: time.Hour}
	h := time.Hour.Milliseconds()
	bound := time.Minute.Milliseconds()
	start := at("2026-11-04T12:00:00Z")
	// Windows that can be open when data of 12:00 moves the watermark:
	// 12:00 - 1h lateness - 1m bound - 1h, floored: from 09:00.
	want := []int64{start - 3*h, start - 2*h, start - h, start}
	if got := windowsToArm(p, start, bound, model.NoWatermark); !slices.Equal(got, want) {
		t.Errorf("fresh shard: %v, want %v", got, want)
	}
	// Windows whose end the shard knows passed are not armed again.
	if got := windowsToArm(p, start, bound, start-h); !slices.Equal(got, want[2:]) {
		t.Errorf("known 11:00: %v, want %v", got, want[2:])
	}
	// A long lateness over tiny windows is capped to the nearest windows.
	p = triggers.Policy{Window: time.Minute, AllowedLateness: 24 * time.Hour}
	got := windowsToArm(p, start, 0, model.NoWatermark)
	if len(got) != maxGapWindows+1 || got[0] != start-maxGapWindows*time.Minute.Milliseconds() || got[len(got)-1] != start {
		t.Errorf("capped range: %d windows from %d, want %d ending at %d", len(got), got[0], maxGapWindows+1, start)
	}
}

// A bundle's events go to their shards in batches, and each window of the
// bundle once to AnnounceWindows, at the earliest timestamp of its events.
func TestAdmitNamesEachWindowOnce(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: time.Hour}
	f := &admitFn{Policy: p}
	f.Setup()
	type window struct{ ts, start, value int64 }
	var batches []model.EventBatch
	var windows []window
	emit := func(_ beam.EventTime, _ int, b model.EventBatch) { batches = append(batches, decoded(t, b)) }
	announce := func(ts beam.EventTime, start, v int64) { windows = append(windows, window{int64(ts), start, v}) }
	quarantine := func(q model.Quarantined) { t.Errorf("quarantined: %+v", q) }
	late := func(r model.TooLate) { t.Errorf("too late: %+v", r) }
	f.StartBundle(emit, announce, quarantine, late)
	for _, e := range []struct {
		id, at string
		ts     int64
	}{
		{"a", "2026-11-04T12:05:00Z", at("2026-11-04T12:00:00Z")},
		{"b", "2026-11-04T10:40:00Z", at("2026-11-04T10:09:00Z")}, // a returning partition's
		{"c", "2026-11-04T12:20:00Z", at("2026-11-04T11:58:00Z")},
		{"d", "2026-11-04T10:50:00Z", at("2026-11-04T10:30:00Z")},
	} {
		ev := model.Event{EventID: e.id, EventTime: at(e.at), Partition: "p0", WatermarkBefore: model.NoWatermark}
		f.ProcessElement(context.Background(), beam.EventTime(e.ts), model.Record{Partition: "p0", Valid: &ev}, emit, announce, quarantine, late)
	}
	f.FinishBundle(emit, announce, quarantine, late)
	n := 0
	for _, b := range batches {
		if len(b.Windows) != 0 {
			t.Errorf("a batch announces windows: %+v", b)
		}
		// The header the gate reads instead of the events.
		if spans, since := spansOf(b.Events, p); !slices.Equal(b.Spans, spans) || b.Since != since {
			t.Errorf("a batch's header says spans %v since %d, its events %v since %d", b.Spans, b.Since, spans, since)
		}
		n += len(b.Events)
	}
	w10, w12 := at("2026-11-04T10:00:00Z"), at("2026-11-04T12:00:00Z")
	want := []window{{at("2026-11-04T10:09:00Z"), w10, at("2026-11-04T10:09:00Z")}, {at("2026-11-04T11:58:00Z"), w12, at("2026-11-04T11:58:00Z")}}
	if n != 4 || !slices.Equal(windows, want) {
		t.Errorf("%d events in batches, windows %v; want 4 and %v", n, windows, want)
	}
}

// A window goes to every shard the first time, and again only for an
// element at a lower timestamp with a boundary (an end or close the shards
// arm for it) between the two.
func TestMustFanOut(t *testing.T) {
	p := triggers.Policy{Window: time.Hour, AllowedLateness: time.Hour}
	bound := time.Minute.Milliseconds()
	w12 := at("2026-11-04T12:00:00Z")
	for _, c := range []struct {
		name       string
		ts, lowest int64
		announced  bool
		want       bool
	}{
		{"first", at("2026-11-04T12:20:00Z"), 0, false, true},
		{"same timestamp", at("2026-11-04T12:20:00Z"), at("2026-11-04T12:20:00Z"), true, false},
		{"later", at("2026-11-04T12:40:00Z"), at("2026-11-04T12:20:00Z"), true, false},
		{"lower, no boundary between", at("2026-11-04T12:01:00Z"), at("2026-11-04T12:20:00Z"), true, false},
		{"lower, across 12:00 (end of 11:00)", at("2026-11-04T11:59:00Z"), at("2026-11-04T12:20:00Z"), true, true},
		{"lower, onto the boundary", at("2026-11-04T11:59:00Z"), at("2026-11-04T12:00:00Z"), true, true},
		{"lower, from the boundary", at("2026-11-04T12:00:00Z"), at("2026-11-04T12:20:00Z"), true, false},
		{"lower, below every armed window", at("2026-11-04T06:00:00Z"), at("2026-11-04T08:30:00Z"), true, false},
	} {
		if got := mustFanOut(p, w12, bound, c.ts, c.lowest, c.announced); got != c.want {
			t.Errorf("%s: mustFanOut = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestHeldFor(t *testing.T) {
	const h = int64(3600000)
	for _, c := range []struct {
		name      string
		armed     []int64
		known, ts int64
		until     int64
		hold      bool
	}{
		{"nothing armed in the bundle", nil, 0, 5 * h, 0, false},
		{"boundary after the batch", []int64{6 * h}, 0, 5 * h, 0, false},
		{"boundary at the batch's timestamp: data sorts first", []int64{5 * h}, 0, 5 * h, 0, false},
		{"boundary already known", []int64{2 * h}, 2 * h, 5 * h, 0, false},
		{"one boundary between", []int64{2 * h}, h, 5 * h, 2 * h, true},
		{"the latest boundary between", []int64{4 * h, 2 * h, 3 * h, 7 * h}, h, 5 * h, 4 * h, true},
		{"no watermark known", []int64{2 * h}, model.NoWatermark, 5 * h, 2 * h, true},
	} {
		until, hold := heldFor(c.armed, c.known, c.ts)
		if until != c.until || hold != c.hold {
			t.Errorf("%s: heldFor = %d, %v; want %d, %v", c.name, until, hold, c.until, c.hold)
		}
	}
}

// Admit sends on only what the steps after it read: no raw line when the
// raw log holds it, no user (the fingerprint holds it) and no read time
// (Admit's delay counters measured it). A line the log cannot give back
// keeps its payload for the audit rows.
func TestAdmitSendsOnlyWhatLaterStepsRead(t *testing.T) {
	f := &admitFn{Policy: triggers.Policy{Window: time.Hour, AllowedLateness: time.Hour}}
	f.Setup()
	var got []model.Event
	emit := func(_ beam.EventTime, _ int, b model.EventBatch) { got = append(got, decoded(t, b).Events...) }
	announce := func(beam.EventTime, int64, int64) {}
	quarantine := func(q model.Quarantined) { t.Errorf("quarantined: %+v", q) }
	late := func(r model.TooLate) { t.Errorf("too late: %+v", r) }
	f.StartBundle(emit, announce, quarantine, late)
	ref := model.LineRef{Path: "/log/p0/000001.jsonl", Offset: 140, Length: 139}
	full := model.Event{EventID: "a", EventTime: at("2026-11-04T12:05:00Z"), UserID: "u1", AmountMicros: 1_990_000, Dims: "{}",
		Fingerprint: 7, Partition: "p0", Position: "p0/000001.jsonl:2", Payload: []byte(`{"event_id":"a"}`), Ref: ref,
		ReadAt: at("2026-11-04T12:06:00Z"), WatermarkBefore: model.NoWatermark}
	unread := full
	unread.EventID, unread.Ref = "b", model.LineRef{}
	for _, e := range []model.Event{full, unread} {
		f.ProcessElement(context.Background(), beam.EventTime(at("2026-11-04T12:00:00Z")), model.Record{Partition: "p0", Valid: &e},
			emit, announce, quarantine, late)
	}
	f.FinishBundle(emit, announce, quarantine, late)
	wantFull := full
	wantFull.UserID, wantFull.ReadAt, wantFull.Payload = "", 0, nil
	wantUnread := unread
	wantUnread.UserID, wantUnread.ReadAt = "", 0
	slices.SortFunc(got, func(a, b model.Event) int { return strings.Compare(a.EventID, b.EventID) })
	if !reflect.DeepEqual(got, []model.Event{wantFull, wantUnread}) {
		t.Errorf("Admit sent\n %+v\nwant\n %+v", got, []model.Event{wantFull, wantUnread})
	}
}

// decoded is b with its events decoded, as the steps that read them see it.
func decoded(t *testing.T, b model.EventBatch) model.EventBatch {
	t.Helper()
	events, err := coders.BatchEvents(b)
	if err != nil {
		t.Fatal(err)
	}
	b.Events, b.Coded, b.N = events, nil, 0
	return b
}
