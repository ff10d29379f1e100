package watermark

import (
	"testing"
	"time"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/testing/rowtest"
)

var ms = rowtest.MS

var policy = Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute}

func TestPartitionBoundedDisorder(t *testing.T) {
	now := ms("2026-11-04T12:00:00Z")
	p := NewPartition(policy, now)
	if w := p.Watermark(); w != model.NoWatermark {
		t.Fatalf("watermark before any event = %d, want NoWatermark", w)
	}
	steps := []struct {
		event      string
		valid      bool
		wantBefore int64
		wantAfter  string
	}{
		{"2026-11-04T10:15:00Z", true, model.NoWatermark, "2026-11-04T10:05:00Z"},
		// Disorder inside the bound: an older event does not move it.
		{"2026-11-04T10:06:00Z", true, ms("2026-11-04T10:05:00Z"), "2026-11-04T10:05:00Z"},
		// Exactly at the bound: equal to the watermark, still not moving it.
		{"2026-11-04T10:05:00Z", true, ms("2026-11-04T10:05:00Z"), "2026-11-04T10:05:00Z"},
		{"2026-11-04T10:20:00Z", true, ms("2026-11-04T10:05:00Z"), "2026-11-04T10:10:00Z"},
		// A quarantined (e.g. future) timestamp never advances it.
		{"2027-01-01T00:00:00Z", false, ms("2026-11-04T10:10:00Z"), "2026-11-04T10:10:00Z"},
	}
	for i, s := range steps {
		before := p.Observe(ms(s.event), s.valid, now)
		if before != s.wantBefore || p.Watermark() != ms(s.wantAfter) {
			t.Errorf("step %d (%s): before=%d after=%s, want before=%d after=%s", i, s.event, before, model.FormatTime(p.Watermark()), s.wantBefore, s.wantAfter)
		}
	}
}

func TestReportedAdvancesWhileIdleAndNeverDecreases(t *testing.T) {
	start := ms("2026-11-04T12:00:00Z")
	p := NewPartition(policy, start)
	p.Observe(ms("2026-11-04T11:00:00Z"), true, start)
	if r := p.Reported(start); r != ms("2026-11-04T10:50:00Z") {
		t.Fatalf("reported while active = %s", model.FormatTime(r))
	}
	idleAt := start + policy.IdleTimeout.Milliseconds()
	if r := p.Reported(idleAt); r != idleAt-policy.OutOfOrderBound.Milliseconds() {
		t.Fatalf("reported while idle = %s, want now - bound", model.FormatTime(r))
	}
	p.Observe(ms("2026-11-04T11:01:00Z"), true, idleAt+1)
	if r := p.Reported(idleAt + 1); r != idleAt-policy.OutOfOrderBound.Milliseconds() {
		t.Fatalf("reported decreased to %s after the partition came back", model.FormatTime(r))
	}
}

// The all-idle setting (SPEC §2, issue #12): an idle partition leaves the
// minimum either way; with every partition idle the watermark follows
// processing time minus the bound, or holds.
func TestIdleAdvanceSetting(t *testing.T) {
	start := ms("2026-11-04T12:00:00Z")
	idleAt := start + policy.IdleTimeout.Milliseconds()
	bound := policy.OutOfOrderBound.Milliseconds()
	for _, c := range []struct {
		advance IdleAdvance
		// reported while idle among an active partition at 11:30, then
		// with every partition idle, one hour later
		among, allIdle int64
		logged         bool
	}{
		{AdvanceProcessingTime, idleAt - bound, idleAt + time.Hour.Milliseconds() - bound, true},
		{AdvanceHold, ms("2026-11-04T11:30:00Z"), ms("2026-11-04T11:30:00Z"), false},
	} {
		pol := policy
		pol.IdleAdvance = c.advance
		p := NewPartition(pol, start)
		p.Observe(ms("2026-11-04T10:00:00Z"), true, start)
		if r, by := reportedAmong(p, start, ms("2026-11-04T11:30:00Z"), true); r != ms("2026-11-04T09:50:00Z") || by {
			t.Errorf("%v: active partition reported %s (by idleness %v), want its own 09:50", c.advance, model.FormatTime(r), by)
		}
		if r, by := reportedAmong(p, idleAt, ms("2026-11-04T11:30:00Z"), true); r != c.among || by {
			t.Errorf("%v: idle among active reported %s (by idleness %v), want %s", c.advance, model.FormatTime(r), by, model.FormatTime(c.among))
		}
		later := idleAt + time.Hour.Milliseconds()
		if r, by := reportedAmong(p, later, model.NoWatermark, false); r != c.allIdle || by != c.logged {
			t.Errorf("%v: all idle reported %s (by idleness %v), want %s (%v)", c.advance, model.FormatTime(r), by, model.FormatTime(c.allIdle), c.logged)
		}
	}
	for _, s := range IdleAdvanceNames {
		if a, err := ParseIdleAdvance(s); err != nil || a.String() != s {
			t.Errorf("ParseIdleAdvance(%q) = %v, %v", s, a, err)
		}
	}
	if _, err := ParseIdleAdvance("wall-clock"); err == nil {
		t.Error("unknown --idle-advance accepted")
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := (Policy{OutOfOrderBound: -time.Second, IdleTimeout: time.Minute}).Validate(); err == nil {
		t.Error("negative bound accepted")
	}
	if err := (Policy{OutOfOrderBound: time.Second}).Validate(); err == nil {
		t.Error("zero idle timeout accepted")
	}
	if err := policy.Validate(); err != nil {
		t.Error(err)
	}
}

func reportedAmong(p *Partition, now, active int64, anyActive bool) (int64, bool) {
	r := p.Report(now, active, anyActive)
	return r.Watermark, r.ByIdleness
}

// The state a reader stores in its restriction resumes the partition
// exactly: watermark, idleness and the hold.
func TestStateResumes(t *testing.T) {
	start := ms("2026-11-04T12:00:00Z")
	p := NewPartition(policy, start)
	p.Observe(ms("2026-11-04T10:00:00Z"), true, start)
	p.Backlog(true)
	p.Observe(ms("2026-11-04T11:00:00Z"), true, start+1)
	w := coders.Writer{}
	p.State().Encode(&w)
	r := coders.Reader{B: w.B}
	q := Resume(policy, DecodeState(&r))
	if r.Err != nil || len(r.B) != 0 || q.State() != p.State() {
		t.Fatalf("decoded %+v (err %v, %d left), want %+v", q.State(), r.Err, len(r.B), p.State())
	}
	if q.Watermark() != ms("2026-11-04T10:50:00Z") || q.Before() != ms("2026-11-04T09:50:00Z") {
		t.Errorf("resumed watermark %s before %s, want 10:50 held at 09:50", model.FormatTime(q.Watermark()), model.FormatTime(q.Before()))
	}
}

// The backlog hold keeps WatermarkBefore and the reported watermark where
// they were when the backlog began; the first fresh record ends it.
func TestBacklogHold(t *testing.T) {
	start := ms("2026-11-04T12:00:00Z")
	p := NewPartition(policy, start)
	p.Observe(ms("2026-11-04T10:00:00Z"), true, start)
	p.Backlog(true)
	if b := p.Observe(ms("2026-11-04T11:00:00Z"), true, start); b != ms("2026-11-04T09:50:00Z") {
		t.Errorf("first backlog record judged at %s, want 09:50", model.FormatTime(b))
	}
	p.Backlog(true)
	if b := p.Observe(ms("2026-11-04T10:30:00Z"), true, start); b != ms("2026-11-04T09:50:00Z") {
		t.Errorf("held record judged at %s, want 09:50", model.FormatTime(b))
	}
	if r := p.Report(start, model.NoWatermark, false); r.Watermark != ms("2026-11-04T09:50:00Z") {
		t.Errorf("reported %s while holding, want 09:50", model.FormatTime(r.Watermark))
	}
	p.Backlog(false)
	if b := p.Observe(ms("2026-11-04T10:40:00Z"), true, start); b != ms("2026-11-04T10:50:00Z") {
		t.Errorf("fresh record judged at %s, want the caught-up 10:50", model.FormatTime(b))
	}
	if r := p.Report(start, model.NoWatermark, false); r.Watermark != ms("2026-11-04T10:50:00Z") {
		t.Errorf("reported %s after the hold, want 10:50", model.FormatTime(r.Watermark))
	}
}

// Report says when the partition goes idle and comes back, once each.
func TestReportIdleTransitions(t *testing.T) {
	start := ms("2026-11-04T12:00:00Z")
	p := NewPartition(policy, start)
	idleAt := start + policy.IdleTimeout.Milliseconds()
	if r := p.Report(idleAt, model.NoWatermark, false); !r.WentIdle || r.CameBack {
		t.Errorf("at the idle timeout: %+v, want WentIdle", r)
	}
	if r := p.Report(idleAt+1, model.NoWatermark, false); r.WentIdle || r.CameBack {
		t.Errorf("still idle: %+v, want no transition", r)
	}
	p.Observe(ms("2026-11-04T10:00:00Z"), true, idleAt+2)
	if r := p.Report(idleAt+2, model.NoWatermark, false); r.WentIdle || !r.CameBack {
		t.Errorf("after a record: %+v, want CameBack", r)
	}
}
