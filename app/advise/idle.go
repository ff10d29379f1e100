package advise

import "time"

// IdleRow is one idle timeout tried, with the other settings as they are.
type IdleRow struct {
	Idle Duration `json:"idle_timeout"`
	// Episodes counts the silences long enough to go idle; EpisodesWithLoss those after which the
	// partition came back with data made late or too late by it.
	Episodes         int `json:"went_idle"`
	EpisodesWithLoss int `json:"came_back_with_late_data"`
	// LateByIdle and TooLateByIdle are the records late or too late only because of idleness.
	LateByIdle    Tally   `json:"late_by_idleness"`
	TooLateByIdle Tally   `json:"too_late_by_idleness"`
	OnTime        Latency `json:"on_time_after_window_end"`
	Fates         Fates   `json:"events"`
}

// Silences are one partition's gaps between arrivals, from the log's first arrival to its own last.
type Silences struct {
	Partition string `json:"partition"`
	Records   int64  `json:"records"`
	Longest   int64  `json:"longest_ms"`
	// AtLeast counts the silences of at least each idle candidate (Advice.Idle's order).
	AtLeast []int64 `json:"at_least_each_timeout"`
}

// idle tries each idle timeout against a replay where no partition ever goes idle.
func (an *analysis) idle() {
	o := an.o
	bound := o.Watermark.OutOfOrderBound
	lateness, retention := o.Triggers.AllowedLateness, o.Retention()
	tp := o.Triggers
	ref := make([]uint8, len(an.l.recs))
	an.judge(an.sim(bound, never), lateness, retention, false, ref)
	idles := candidates(o.Try.Idle, o.Watermark.IdleTimeout)
	an.silences(idles)
	got := make([]uint8, len(an.l.recs))
	for k, it := range idles {
		s := an.sim(bound, it)
		out := an.judge(s, lateness, retention, false, got)
		row := IdleRow{Idle: Duration(it), OnTime: out.OnTime, Fates: out.Fates}
		for _, sl := range an.a.Silences {
			row.Episodes += int(sl.AtLeast[k])
		}
		lossy := map[int32]bool{}
		for i, r := range an.l.recs {
			if !r.valid || !o.Range.Contains(tp.WindowStart(r.et)) {
				continue
			}
			var byIdle bool
			switch {
			case got[i] == classLate && ref[i] != classLate && ref[i] != classTooLate:
				row.LateByIdle.add(r.amount)
				byIdle = true
			case got[i] == classTooLate && ref[i] != classTooLate:
				row.TooLateByIdle.add(r.amount)
				byIdle = true
			}
			if byIdle && s.episode[i] >= 0 && s.own[i] < s.pipe[i] {
				lossy[s.episode[i]] = true
			}
		}
		row.EpisodesWithLoss = len(lossy)
		an.a.Idle = append(an.a.Idle, row)
	}
}

// silences measures each partition's gaps between arrivals.
func (an *analysis) silences(idles []time.Duration) {
	last, out := make([]int64, len(an.l.Partitions)), make([]Silences, len(an.l.Partitions))
	for i, p := range an.l.Partitions {
		last[i] = an.l.First // every partition is read from the start
		out[i] = Silences{Partition: p, AtLeast: make([]int64, len(idles))}
	}
	for _, r := range an.l.recs {
		sl := &out[r.part]
		gap := r.at - last[r.part]
		last[r.part] = r.at
		sl.Records++
		sl.Longest = max(sl.Longest, gap)
		for k, it := range idles {
			if gap >= it.Milliseconds() {
				sl.AtLeast[k]++
			}
		}
	}
	an.a.Silences = out
}
