package advise

import (
	"slices"
	"sort"
	"time"
)

// ref recomputes every figure of the advisor from the generated records
// alone, from the definitions in the spec and docs/advise.md, in the most
// direct way: no package of the product, a watermark re-derived from "the
// largest valid event time seen minus the bound", idleness from "no record
// for the idle timeout", the all-idle advance from "processing time minus
// the bound", dedup from "the first copy reaching an open window counts".
// It is slow (quadratic in places) and independent.
type ref struct {
	recs   []genRec
	start  int64
	window int64
	parts  int
	segs   func(genRec) string
}

// wmAt is the watermark state just before processing time t (records
// arriving before t, plus the first skip records arriving at t).
type wmState struct {
	maxEt      []int64 // per partition, noWM when none
	lastActive []int64
	adv        []int64 // largest (return instant - bound) of past idle periods
}

func (r *ref) state(t int64, upto int, bound, idle int64) wmState {
	s := wmState{maxEt: make([]int64, r.parts), lastActive: make([]int64, r.parts), adv: make([]int64, r.parts)}
	for p := range r.parts {
		s.maxEt[p], s.lastActive[p], s.adv[p] = noWM, r.start, noWM
	}
	for i := 0; i < upto; i++ {
		x := r.recs[i]
		if x.at-s.lastActive[x.part] >= idle {
			// The partition was idle until this record: its report had
			// advanced to now - bound by then, and a report never goes back.
			s.adv[x.part] = max(s.adv[x.part], x.at-bound)
		}
		s.lastActive[x.part] = x.at
		if x.valid {
			s.maxEt[x.part] = max(s.maxEt[x.part], x.et)
		}
	}
	return s
}

// reported is what partition p hands the runner at t: its watermark, or,
// idle, at least t - bound; never less than it once reported.
func (s wmState) reported(p int, t, bound, idle int64) int64 {
	w := noWM
	if s.maxEt[p] != noWM {
		w = s.maxEt[p] - bound
	}
	w = max(w, s.adv[p])
	if t-s.lastActive[p] >= idle {
		w = max(w, t-bound)
	}
	return w
}

func (s wmState) pipe(t, bound, idle int64) int64 {
	pipe := int64(1<<63 - 1)
	for p := range s.maxEt {
		pipe = min(pipe, s.reported(p, t, bound, idle))
	}
	return pipe
}

// refJudged is the reference's verdicts for one setting.
type refJudged struct {
	out     Outcome
	classes []uint8
	own     []int64
	pipe    []int64
	back    []int // per record: the idle episode its partition came back from last (-1)
}

// judge computes the outcome of (bound, idle, lateness, retention).
func (r *ref) judge(bound, idle, lateness, retention time.Duration, segIdx map[string]int, nsegs int) refJudged {
	b, it, a, ret := ms(bound), ms(idle), ms(lateness), ms(retention)
	n := len(r.recs)
	j := refJudged{classes: make([]uint8, n), own: make([]int64, n), pipe: make([]int64, n), back: make([]int, n)}
	o := &j.out
	o.Bound, o.Idle, o.Lateness, o.Retention = Duration(bound), Duration(idle), Duration(lateness), Duration(retention)
	o.ByPartition, o.BySegment = make([]Fates, r.parts), make([]Fates, nsegs)
	// Incremental form of state(): the same rules, record by record.
	st := r.state(0, 0, b, it)
	episodes, backOf := 0, make([]int, r.parts)
	for p := range backOf {
		backOf[p] = -1
	}
	type idState struct {
		counted   bool
		content   string
		countedWE int64
		ever      bool
		first     int
	}
	ids := map[string]*idState{}
	var order []string
	openOnTime := map[int64]bool{}
	add := func(f *Fates, which int, x genRec) {
		tl := []*Tally{&f.OnTime, &f.Late, &f.TooLate}[which]
		tl.Events++
		tl.RevenueMicros += x.amount
	}
	fate := func(which int, x genRec) {
		add(&o.Fates, which, x)
		add(&o.ByPartition[x.part], which, x)
		add(&o.BySegment[segIdx[r.segs(x)]], which, x)
	}
	pipe, pipeAt := int64(noWM), int64(noWM)
	for i, x := range r.recs {
		if i == 0 || x.at != pipeAt {
			// The pipeline watermark at an instant is what the records
			// that arrived before it made.
			pipe, pipeAt = st.pipe(x.at, b, it), x.at
		}
		own := int64(noWM)
		if st.maxEt[x.part] != noWM {
			own = st.maxEt[x.part] - b
		}
		j.own[i], j.pipe[i] = own, pipe
		if x.at-st.lastActive[x.part] >= it {
			st.adv[x.part] = max(st.adv[x.part], x.at-b)
			backOf[x.part] = episodes
			episodes++
		}
		j.back[i] = backOf[x.part]
		st.lastActive[x.part] = x.at
		if !x.valid {
			continue
		}
		st.maxEt[x.part] = max(st.maxEt[x.part], x.et)
		ws := x.et - ((x.et%r.window)+r.window)%r.window
		we := ws + r.window
		s := ids[x.id]
		if s == nil {
			s = &idState{first: i}
			ids[x.id] = s
			order = append(order, x.id)
		}
		if s.counted && ret > 0 && pipe >= s.countedWE+ret {
			s.counted = false // forgotten
		}
		closed := (own != noWM && we+a <= own) || (pipe != noWM && we+a <= pipe)
		switch {
		case closed:
			j.classes[i] = classTooLate
			o.Records.TooLate++
		case !s.counted:
			s.counted, s.content, s.countedWE = true, x.content, we
			o.Records.Counted++
			late := pipe >= we
			j.classes[i] = classOnTime
			if late {
				j.classes[i] = classLate
			} else {
				openOnTime[ws] = true
			}
			switch {
			case s.ever:
				o.DoubleCounted.Events++
				o.DoubleCounted.RevenueMicros += x.amount
			case late:
				fate(1, x)
			default:
				fate(0, x)
			}
			s.ever = true
		case s.content == x.content:
			j.classes[i] = classDuplicate
			o.Records.Duplicates++
		default:
			j.classes[i] = classConflict
			o.Records.Conflicts++
		}
	}
	for _, id := range order {
		if s := ids[id]; !s.ever {
			fate(2, r.recs[s.first])
		}
	}
	o.OnTime = r.onTime(openOnTime, b, it)
	return j
}

// onTime finds, for each window, the first instant the pipeline watermark
// reaches its end, among every instant it can change at: arrivals, a
// partition's idle timeout expiring after a record (or after the start),
// and a window end + bound (an idle partition's advance crossing it).
func (r *ref) onTime(open map[int64]bool, b, it int64) Latency {
	instants := []int64{r.start + it}
	ends := map[int64]bool{}
	for _, x := range r.recs {
		instants = append(instants, x.at, x.at+it)
		if x.valid {
			ws := x.et - ((x.et%r.window)+r.window)%r.window
			ends[ws+r.window] = true
		}
	}
	for e := range ends {
		instants = append(instants, e+b)
	}
	slices.Sort(instants)
	instants = slices.Compact(instants)
	pipeAt := func(t int64) int64 {
		upto := sort.Search(len(r.recs), func(i int) bool { return r.recs[i].at >= t })
		return r.state(t, upto, b, it).pipe(t, b, it)
	}
	lt := Latency{Known: true}
	var ds []int64
	for ws := range open {
		lt.Windows++
		e := ws + r.window
		k := sort.Search(len(instants), func(i int) bool { return pipeAt(instants[i]) >= e })
		if k == len(instants) {
			lt.Never++
			continue
		}
		ds = append(ds, instants[k]-e)
	}
	slices.Sort(ds)
	if len(ds) > 0 {
		rank := func(p int) int64 { return ds[max(1, (len(ds)*p+99)/100)-1] }
		lt.P50, lt.P95, lt.Max = rank(50), rank(95), ds[len(ds)-1]
	}
	return lt
}

// lateness is each valid record's distance behind the largest event time
// its partition had shown.
func (r *ref) lateness() []int64 {
	maxEt := make([]int64, r.parts)
	for p := range maxEt {
		maxEt[p] = noWM
	}
	var out []int64
	for _, x := range r.recs {
		if !x.valid {
			continue
		}
		if maxEt[x.part] != noWM && maxEt[x.part] > x.et {
			out = append(out, maxEt[x.part]-x.et)
		} else {
			out = append(out, 0)
		}
		maxEt[x.part] = max(maxEt[x.part], x.et)
	}
	slices.Sort(out)
	return out
}

// silences are each partition's gaps between arrivals, the first from the
// log's start.
func (r *ref) silences(idles []time.Duration) []Silences {
	out := make([]Silences, r.parts)
	last := make([]int64, r.parts)
	for p := range out {
		out[p] = Silences{Partition: "p" + string(rune('0'+p)), AtLeast: make([]int64, len(idles))}
		last[p] = r.start
	}
	for _, x := range r.recs {
		gap := x.at - last[x.part]
		last[x.part] = x.at
		s := &out[x.part]
		s.Records++
		s.Longest = max(s.Longest, gap)
		for k, it := range idles {
			if gap >= ms(it) {
				s.AtLeast[k]++
			}
		}
	}
	return out
}

// dist is the nearest-rank summary the advisor reports, with the counts in
// internal/delay's bucket bounds (the stream's histogram).
func dist(sorted []int64) Distribution {
	d := Distribution{Count: int64(len(sorted))}
	rank := func(p int) int64 { return sorted[max(1, (len(sorted)*p+99)/100)-1] }
	if len(sorted) > 0 {
		d.P50, d.P90, d.P95, d.P99, d.Max = rank(50), rank(90), rank(95), rank(99), sorted[len(sorted)-1]
	}
	bounds := []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 6 * time.Hour, 24 * time.Hour}
	d.Buckets = make([]int64, len(bounds)+1)
	for _, v := range sorted {
		d.Buckets[sort.Search(len(bounds), func(i int) bool { return v < ms(bounds[i]) })]++
	}
	return d
}
