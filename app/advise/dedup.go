package advise

import "slices"

// RetentionRow is one dedup horizon tried.
type RetentionRow struct {
	Retention Duration `json:"dedup_retention"`
	// Refused: shorter than window + allowed lateness, which cmd/launch refuses.
	Refused bool `json:"refused"`
	// BeyondEventTime counts later copies that came once the pipeline watermark passed the first
	// copy's window end + the horizon: the id was forgotten.
	BeyondEventTime int64 `json:"forgotten_before_copy"`
	// BeyondArrival counts later copies more than the horizon of processing time after the first
	// (what a TTL would miss); -1 without a clock.
	BeyondArrival int64 `json:"later_than_horizon_in_arrival"`
	// DoubleCounted are the copies counted a second time, and their revenue.
	DoubleCounted Tally `json:"counted_twice"`
	// ToReconcile counts copies beyond the horizon that were too late anyway.
	ToReconcile int64 `json:"too_late_anyway"`
}

// CopyStats describes the later copies of event ids, whose gaps decide the dedup horizon.
type CopyStats struct {
	Copies      int64 `json:"copies"`
	Identical   int64 `json:"identical"`
	Conflicting int64 `json:"conflicting"`
	// GapEventTime is, per copy, how far the watermark was past the first copy's window end.
	GapEventTime Distribution `json:"watermark_past_window_end"`
	// GapArrival is, per copy, the processing time since the first copy (empty without a clock).
	GapArrival Distribution `json:"arrival_after_first_copy"`
}

// retention tries each dedup horizon at the current bound, idle timeout and lateness.
func (an *analysis) retention() {
	o := an.o
	s := an.sim(o.Watermark.OutOfOrderBound, o.Watermark.IdleTimeout)
	tp := o.Triggers
	var st CopyStats
	var copies []int // each later copy's index in recs, its gap (gapE before the floor at 0)
	var gaps, gapE, gapA []int64
	first := an.l.first
	for i, r := range an.l.recs {
		if !r.valid || first[r.id] == int32(i+1) {
			continue
		}
		f := an.l.recs[first[r.id]-1]
		if !o.Range.Contains(tp.WindowStart(f.et)) {
			continue
		}
		if r.fp == f.fp {
			st.Identical++
		}
		g := s.pipe[i] - tp.WindowEnd(tp.WindowStart(f.et))
		copies, gaps, gapE = append(copies, i), append(gaps, g), append(gapE, max(0, g))
		if an.l.clock != NoClock {
			gapA = append(gapA, r.at-f.at)
		}
	}
	st.Copies = int64(len(copies))
	st.Conflicting = st.Copies - st.Identical
	st.GapEventTime, st.GapArrival = newDistribution(gapE), newDistribution(gapA) // sorts them
	an.a.Copies = st

	floor := tp.Lifetime()
	classes := make([]uint8, len(an.l.recs))
	for _, h := range candidates(o.Try.Retention, o.Retention()) {
		row := RetentionRow{Retention: Duration(h), Refused: h < floor, BeyondArrival: -1}
		hm := h.Milliseconds()
		row.BeyondEventTime = int64(len(gapE) - lowerBound(gapE, hm))
		if an.l.clock != NoClock {
			row.BeyondArrival = int64(len(gapA) - lowerBound(gapA, hm+1))
		}
		row.DoubleCounted = an.judge(s, tp.AllowedLateness, h, false, classes).DoubleCounted
		for k, i := range copies {
			if classes[i] == classTooLate && gaps[k] >= hm {
				row.ToReconcile++
			}
		}
		an.a.Retention = append(an.a.Retention, row)
	}
}

// lowerBound is the index of the first sorted value >= v.
func lowerBound(sorted []int64, v int64) int {
	i, _ := slices.BinarySearch(sorted, v)
	return i
}
