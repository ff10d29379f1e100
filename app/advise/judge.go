package advise

import (
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/triggers"
)

// Tally counts events and their revenue (exact micros).
type Tally struct {
	Events        int64 `json:"events"`
	RevenueMicros int64 `json:"revenue_micros"`
}

func (t *Tally) add(amount int64) { t.Events++; t.RevenueMicros += amount }

// Fates splits distinct events: counted ON_TIME, counted later in a LATE revision, or too late.
type Fates struct {
	OnTime  Tally `json:"on_time"`
	Late    Tally `json:"late"`
	TooLate Tally `json:"too_late"`
}

// of is the tally of a class: classOnTime, classLate or classTooLate.
func (f *Fates) of(class uint8) *Tally {
	return [...]*Tally{classOnTime: &f.OnTime, classLate: &f.Late, classTooLate: &f.TooLate}[class]
}

// Total is every distinct event.
func (f Fates) Total() Tally {
	return Tally{f.OnTime.Events + f.Late.Events + f.TooLate.Events,
		f.OnTime.RevenueMicros + f.Late.RevenueMicros + f.TooLate.RevenueMicros}
}

// Records are the verdicts of the valid records (SPEC §4's terms, less the quarantine).
type Records struct {
	Counted    int64 `json:"counted"`
	Duplicates int64 `json:"duplicates"`
	Conflicts  int64 `json:"conflicts"`
	TooLate    int64 `json:"too_late"`
}

// Latency is when ON_TIME rows come: processing time after the window end (ms).
type Latency struct {
	// Known is false without an arrival clock.
	Known   bool  `json:"known"`
	Windows int   `json:"windows"`
	P50     int64 `json:"p50_ms"`
	P95     int64 `json:"p95_ms"`
	Max     int64 `json:"max_ms"`
	// Never counts windows whose ON_TIME did not come within the log (the watermark held).
	Never int `json:"never"`
}

// Outcome is what the stream would make of the log with one set of settings.
type Outcome struct {
	Bound     Duration `json:"ooo_bound"`
	Idle      Duration `json:"idle_timeout"`
	Lateness  Duration `json:"allowed_lateness"`
	Retention Duration `json:"dedup_retention"`
	Fates     Fates    `json:"events"`
	Records   Records  `json:"records"`
	// DoubleCounted are copies counted again because their id was forgotten.
	DoubleCounted Tally   `json:"counted_twice"`
	OnTime        Latency `json:"on_time_after_window_end"`
	// ByPartition and BySegment split Fates in LogSummary's order (nil unless asked for).
	ByPartition []Fates `json:"by_partition,omitempty"`
	BySegment   []Fates `json:"by_segment,omitempty"`
}

// Duration is a setting's value; JSON spells it as its flag does ("30m").
type Duration time.Duration

func (d Duration) String() string { return cli.FormatDuration(time.Duration(d)) }

// MarshalText spells the flag value.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a flag value.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Record classes, for comparing two outcomes record by record.
const (
	classInvalid uint8 = iota
	classOnTime
	classLate
	classDuplicate
	classConflict
	classTooLate
)

// verdictClass is a verdict's class; a counted record is classLate if past its window end.
var verdictClass = [...]uint8{event.Counted: classOnTime, event.Duplicate: classDuplicate, event.Conflict: classConflict, event.TooLate: classTooLate}

// scratch is judge's per-id memory, reused from one judgement to the next.
type scratch struct {
	seen      []event.Seen
	countedIn []int64 // the counted copy's window start
	ever      []bool  // counted at least once
}

func (s *scratch) reset(ids int) {
	if cap(s.seen) < ids {
		*s = scratch{seen: make([]event.Seen, ids), countedIn: make([]int64, ids), ever: make([]bool, ids)}
		return
	}
	clear(s.seen[:ids])
	clear(s.ever[:ids])
}

// judge applies SPEC §4 to every valid record of a replay in arrival order (event.Seen.Judge),
// with a lateness and a retention: rules (a) and (b), then dedup. A counted record past its window
// end is late. An id is forgotten once the pipeline watermark passes its window's end + retention,
// as the stream's dedup state is. split fills ByPartition and BySegment; classes, if not nil, gets
// each record's class.
func (an *analysis) judge(s *sim, lateness, retention time.Duration, split bool, classes []uint8) Outcome {
	l, tp, rng, ret := an.l, an.o.Triggers, an.o.Range, retention.Milliseconds()
	tp.AllowedLateness = lateness
	o := Outcome{Bound: Duration(s.bound), Idle: Duration(s.idle), Lateness: Duration(lateness), Retention: Duration(time.Duration(ret) * time.Millisecond)}
	if split {
		o.ByPartition, o.BySegment = make([]Fates, len(l.Partitions)), make([]Fates, len(l.Segments))
	}
	an.scratch.reset(l.IDs)
	seen, countedIn, ever := an.scratch.seen[:l.IDs], an.scratch.countedIn[:l.IDs], an.scratch.ever[:l.IDs]
	openOnTime := map[int64]bool{}
	var records [classTooLate + 1]int64
	fate := func(r rec, class uint8) {
		if rng.Contains(tp.WindowStart(r.et)) {
			o.Fates.of(class).add(r.amount)
			if split {
				o.ByPartition[r.part].of(class).add(r.amount)
				o.BySegment[r.seg].of(class).add(r.amount)
			}
		}
	}
	for i, r := range l.recs {
		if !r.valid {
			continue
		}
		ws := tp.WindowStart(r.et)
		sn := &seen[r.id]
		if sn.Counted && ret > 0 && s.pipe[i] >= tp.WindowEnd(countedIn[r.id])+ret {
			*sn = event.Seen{} // forgotten: the dedup horizon passed
		}
		closed := tp.Closed(ws, s.own[i]) || tp.Closed(ws, s.pipe[i])
		in := rng.Contains(ws)
		class := verdictClass[sn.Judge(r.fp, closed)]
		if class == classOnTime {
			if s.pipe[i] >= tp.WindowEnd(ws) {
				class = classLate
			} else {
				openOnTime[ws] = true
			}
			countedIn[r.id] = ws
			if !ever[r.id] {
				fate(r, class)
			} else if in {
				o.DoubleCounted.add(r.amount)
			}
			ever[r.id] = true
		}
		if in {
			records[class]++
		}
		if classes != nil {
			classes[i] = class
		}
	}
	o.Records = Records{Counted: records[classOnTime] + records[classLate], Duplicates: records[classDuplicate], Conflicts: records[classConflict], TooLate: records[classTooLate]}
	for id, f := range l.first {
		if f > 0 && !ever[id] {
			fate(l.recs[f-1], classTooLate)
		}
	}
	o.OnTime = latency(s, tp, rng, openOnTime)
	return o
}

// latency measures when ON_TIME came for the windows with data before it.
func latency(s *sim, tp triggers.Policy, rng Range, open map[int64]bool) Latency {
	if s.onTime == nil {
		return Latency{}
	}
	lt := Latency{Known: true}
	var ds []int64
	for ws := range open {
		if !rng.Contains(ws) {
			continue
		}
		lt.Windows++
		at, ok := s.onTime[ws]
		if !ok {
			lt.Never++
			continue
		}
		ds = append(ds, max(0, at-tp.WindowEnd(ws)))
	}
	d := newDistribution(ds)
	lt.P50, lt.P95, lt.Max = d.P50, d.P95, d.Max
	return lt
}
