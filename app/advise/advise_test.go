package advise

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/internal/cli"
)

var genStart = time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)

// figuresLog is the log of TestFiguresMatchIndependentComputation: three
// partitions, an original every 20 s in each for 10 h, lateness from fixed
// percentiles, a retry of every tenth original after a gap from a fixed
// distribution (10 s to 26 h), a conflicting retry of every fiftieth,
// partition p1 silent for 47 minutes across a window end and then
// delivering its backlog (late when it went idle: the window closed
// without it).
func figuresLog(t *testing.T) (string, []genRec) {
	return writeGenLog(t, genConfig{
		start: genStart, partitions: 3, step: 20 * time.Second, slots: 1800,
		silent: 1, silentFrom: 4*time.Hour + 25*time.Minute, silentTo: 5*time.Hour + 12*time.Minute,
		copies: true, tail: true,
	})
}

func figuresOptions(dir string) Options {
	o := Defaults()
	o.Source, o.ArrivalField, o.Segments = dir, "received_at", []string{"region"}
	o.Now = genStart.Add(30 * 24 * time.Hour)
	o.Try = Candidates{
		Bounds:              []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour},
		LatenessPercentiles: []int{95},
		Lateness:            []time.Duration{time.Hour, 6 * time.Hour, 48 * time.Hour},
		Retention:           []time.Duration{time.Hour, 6 * time.Hour, 48 * time.Hour},
		Idle:                []time.Duration{time.Minute, 30 * time.Minute, time.Hour},
	}
	o.Targets = Targets{LateSharePPM: 100_000, TooLateSharePPM: 20_000, OnTime: 45 * time.Minute}
	return o
}

// TestFiguresMatchIndependentComputation checks every figure of the advice
// on a generated log against the reference computation (ref_test.go),
// which knows the generator's records and nothing of the product, for at
// least three candidates of each setting.
func TestFiguresMatchIndependentComputation(t *testing.T) {
	dir, recs := figuresLog(t)
	o := figuresOptions(dir)
	a, err := Analyze(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r := &ref{recs: recs, start: recs[0].at, window: ms(time.Hour), parts: 3, segs: func(x genRec) string { return `{"region":"` + x.region + `"}` }}
	segIdx := map[string]int{}
	for i, s := range a.Log.Segments {
		segIdx[s] = i
	}
	// Every valid record's segment is a known one, and the first is the
	// empty one of invalid records.
	for _, x := range recs {
		if _, ok := segIdx[r.segs(x)]; x.valid && !ok {
			t.Fatalf("segment %s missing from %v", r.segs(x), a.Log.Segments)
		}
	}
	nsegs := len(a.Log.Segments)

	// The log's own figures.
	var valid, read int64
	for _, x := range recs {
		read++
		if x.valid {
			valid++
		}
	}
	if a.Log.Read != read || a.Log.Valid != valid || a.Log.Quarantined["malformed_json"] != 3 || a.Log.Clock != FieldClock.String() {
		t.Errorf("log: read %d valid %d quarantined %v clock %s, want %d, %d, 3 malformed_json, %s",
			a.Log.Read, a.Log.Valid, a.Log.Quarantined, a.Log.Clock, read, valid, FieldClock)
	}
	lat := r.lateness()
	same(t, "event lateness", a.Lateness, dist(lat))

	// The known distribution, in closed form: 1 % of originals are 30 h
	// late, beyond window + lateness for every bound up to 2 h.
	cur := 10 * time.Minute
	bounds := []time.Duration{time.Minute, 5 * time.Minute, cur, 30 * time.Minute, 2 * time.Hour}
	p95 := time.Duration((nearest(lat, 95)+59_999)/60_000) * time.Minute
	bounds = slices.Compact(slices.Sorted(slices.Values(append(bounds, p95))))
	if len(a.Bounds) != len(bounds) {
		t.Fatalf("bounds tried: %d, want %v", len(a.Bounds), bounds)
	}
	for i, b := range bounds {
		want := r.judge(b, 5*time.Minute, 24*time.Hour, 25*time.Hour, segIdx, nsegs).out
		same(t, "bound "+b.String(), a.Bounds[i], want)
		if got, originals := a.Bounds[i].Fates.TooLate.Events, int64(3*1800/100); got != originals {
			t.Errorf("bound %v: %d events too late, want the %d originals 30 h late", b, got, originals)
		}
	}
	for i, l := range []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 48 * time.Hour} {
		want := r.judge(cur, 5*time.Minute, l, max(25*time.Hour, time.Hour+l), segIdx, nsegs).out
		want.ByPartition, want.BySegment = nil, nil
		same(t, "lateness "+l.String(), a.LatenessTable[i], want)
	}
	if got := a.LatenessTable[3].Fates.TooLate.Events; got != 0 {
		t.Errorf("lateness 48h: %d too late, want 0 (the 30 h events are within it)", got)
	}

	// Dedup horizons: copies, their gaps and what each horizon forgets.
	base := r.judge(cur, 5*time.Minute, 24*time.Hour, 25*time.Hour, segIdx, nsegs)
	var st CopyStats
	var gapE, gapA []int64
	first := map[string]int{}
	for i, x := range recs {
		if !x.valid {
			continue
		}
		f, ok := first[x.id]
		if !ok {
			first[x.id] = i
			continue
		}
		st.Copies++
		if x.content == recs[f].content {
			st.Identical++
		} else {
			st.Conflicting++
		}
		we := windowEnd(recs[f].et)
		gapE = append(gapE, max(0, base.pipe[i]-we))
		gapA = append(gapA, x.at-recs[f].at)
	}
	slices.Sort(gapE)
	slices.Sort(gapA)
	st.GapEventTime, st.GapArrival = dist(gapE), dist(gapA)
	same(t, "copies", a.Copies, st)
	if st.Identical == 0 || st.Conflicting == 0 {
		t.Fatalf("the log has %d identical and %d conflicting copies: both are needed", st.Identical, st.Conflicting)
	}
	for i, h := range []time.Duration{time.Hour, 6 * time.Hour, 25 * time.Hour, 48 * time.Hour} {
		j := r.judge(cur, 5*time.Minute, 24*time.Hour, h, segIdx, nsegs)
		want := RetentionRow{Retention: Duration(h), Refused: h < 25*time.Hour, DoubleCounted: j.out.DoubleCounted}
		for k, x := range recs {
			if !x.valid || first[x.id] == k {
				continue
			}
			f := recs[first[x.id]]
			if base.pipe[k]-windowEnd(f.et) >= ms(h) {
				want.BeyondEventTime++
				if j.classes[k] == classTooLate {
					want.ToReconcile++
				}
			}
			if x.at-f.at > ms(h) {
				want.BeyondArrival++
			}
		}
		same(t, "retention "+h.String(), a.Retention[i], want)
		if !want.Refused && want.DoubleCounted.Events != 0 {
			t.Errorf("retention %v (accepted by cmd/launch) counts %d copies twice", h, want.DoubleCounted.Events)
		}
	}
	if a.Retention[0].DoubleCounted.Events == 0 {
		t.Error("a 1h horizon counts no copy twice: the log does not exercise the residual duplicates")
	}

	// Idle timeouts: against a replay where no partition goes idle.
	idles := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, time.Hour}
	same(t, "silences", a.Silences, r.silences(idles))
	never := r.judge(cur, never, 24*time.Hour, 25*time.Hour, segIdx, nsegs)
	for i, it := range idles {
		j := r.judge(cur, it, 24*time.Hour, 25*time.Hour, segIdx, nsegs)
		want := IdleRow{Idle: Duration(it), OnTime: j.out.OnTime, Fates: j.out.Fates}
		for _, s := range r.silences(idles) {
			want.Episodes += int(s.AtLeast[i])
		}
		lossy := map[int]bool{}
		for k, x := range recs {
			if !x.valid {
				continue
			}
			byIdle := false
			switch g, n := j.classes[k], never.classes[k]; {
			case g == classLate && n != classLate && n != classTooLate:
				want.LateByIdle.Events++
				want.LateByIdle.RevenueMicros += x.amount
				byIdle = true
			case g == classTooLate && n != classTooLate:
				want.TooLateByIdle.Events++
				want.TooLateByIdle.RevenueMicros += x.amount
				byIdle = true
			}
			if byIdle && j.back[k] >= 0 && j.own[k] < j.pipe[k] {
				lossy[j.back[k]] = true
			}
		}
		want.EpisodesWithLoss = len(lossy)
		same(t, "idle "+it.String(), a.Idle[i], want)
	}
	if a.Idle[0].EpisodesWithLoss == 0 || a.Idle[0].LateByIdle.Events == 0 {
		t.Errorf("idle 1m: %+v: the silent partition's backlog should come back late", a.Idle[0])
	}

	// The recommendation: the smallest candidates (lateness, then bound,
	// then idle timeout) meeting late <= 10 %, too late <= 2 %, ON_TIME <=
	// 45 m, nothing counted twice, searched here again.
	type pick struct{ a, b, i time.Duration }
	var best *pick
	for _, l := range []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 48 * time.Hour} {
		for _, b := range bounds {
			for _, it := range idles {
				out := r.judge(b, it, l, time.Hour+l, segIdx, nsegs).out
				tot := out.Fates.Total()
				ok := out.Fates.Late.Events*10 <= tot.Events && out.Fates.Late.RevenueMicros*10 <= tot.RevenueMicros &&
					out.Fates.TooLate.Events*50 <= tot.Events && out.Fates.TooLate.RevenueMicros*50 <= tot.RevenueMicros &&
					out.OnTime.Never == 0 && out.OnTime.Max <= ms(45*time.Minute) && out.DoubleCounted.Events == 0
				if ok && (best == nil || l < best.a || l == best.a && (b < best.b || b == best.b && it < best.i)) {
					best = &pick{l, b, it}
				}
			}
		}
	}
	if best == nil {
		t.Fatal("the reference finds no candidate meeting the targets: the test's targets are wrong")
	}
	rec := a.Recommendation
	want := r.judge(best.b, best.i, best.a, time.Hour+best.a, segIdx, nsegs).out
	same(t, "recommended outcome", rec.Outcome, want)
	wantFlags := []string{"--ooo-bound=" + cli.FormatDuration(best.b), "--idle-timeout=" + cli.FormatDuration(best.i),
		"--allowed-lateness=" + cli.FormatDuration(best.a), "--dedup-retention=" + cli.FormatDuration(time.Hour+best.a)}
	if !rec.Met || !slices.Equal(rec.Flags, wantFlags) {
		t.Errorf("recommendation %v (met %v, misses %v), want %v", rec.Flags, rec.Met, rec.Misses, wantFlags)
	}
	t.Logf("recommended %v: late %d/%d, too late %d, ON_TIME max %v", rec.Flags, want.Fates.Late.Events, want.Fates.Total().Events,
		want.Fates.TooLate.Events, time.Duration(want.OnTime.Max)*time.Millisecond)
}

func windowEnd(et int64) int64 {
	h := ms(time.Hour)
	return et - ((et%h)+h)%h + h
}

func nearest(sorted []int64, p int) int64 { return sorted[max(1, (len(sorted)*p+99)/100)-1] }

// same fails with both values as JSON when they differ.
func same(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}
