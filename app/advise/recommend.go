package advise

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/watermark"
)

// Recommendation is the smallest candidate settings that meet the targets, and what they achieve.
type Recommendation struct {
	// Met says every target is met; Misses says how the others are missed.
	Met    bool     `json:"met"`
	Misses []string `json:"misses"`
	// Outcome is what the recommended settings achieve.
	Outcome Outcome `json:"achieves"`
	// Flags are the cmd/launch flags that set them.
	Flags []string `json:"flags"`
}

// target is one of the user's targets: how far an outcome misses it (0: met), and in words.
type target struct {
	set  bool
	miss func(Outcome) (int64, string)
}

// targets lists the targets in the order kept when not all can be met: none counted twice, too
// late, ON_TIME, then late (automatic corrections, the cheapest to give up).
func (an *analysis) targets() []target {
	t := an.o.Targets
	clock := an.l.clock != NoClock
	return []target{
		{true, func(o Outcome) (int64, string) {
			if n := o.DoubleCounted.Events - t.ResidualDups; n > 0 {
				return n, fmt.Sprintf("%d copies counted twice, more than --target-residual-dups=%d", o.DoubleCounted.Events, t.ResidualDups)
			}
			return 0, ""
		}},
		{t.TooLateSharePPM >= 0, func(o Outcome) (int64, string) {
			return overShare("too late", o.Fates.TooLate, o.Fates.Total(), t.TooLateSharePPM, "--target-too-late-share")
		}},
		{t.OnTime > 0, func(o Outcome) (int64, string) {
			switch {
			case !clock:
				return 1, "--target-ontime needs an arrival clock (--arrival-field, or a Pub/Sub archive's publish times)"
			case o.OnTime.Never > 0:
				return math.MaxInt64/2 + int64(o.OnTime.Never), fmt.Sprintf("%d windows get no ON_TIME row within the log", o.OnTime.Never)
			case o.OnTime.Max > t.OnTime.Milliseconds():
				return o.OnTime.Max - t.OnTime.Milliseconds(), fmt.Sprintf("ON_TIME up to %s after the window end, more than --target-ontime=%s",
					report.Delay(o.OnTime.Max), cli.FormatDuration(t.OnTime))
			}
			return 0, ""
		}},
		{t.LateSharePPM >= 0, func(o Outcome) (int64, string) {
			return overShare("late (LATE revisions)", o.Fates.Late, o.Fates.Total(), t.LateSharePPM, "--target-late-share")
		}},
	}
}

// overShare is how far (ppm) the share of events or of revenue exceeds its target.
func overShare(what string, part, total Tally, ppm int64, flag string) (int64, string) {
	over := max(ppmCeil(part.Events, total.Events)-ppm, ppmCeil(part.RevenueMicros, total.RevenueMicros)-ppm, 0)
	if over == 0 {
		return 0, ""
	}
	return over, fmt.Sprintf("%s %s of events and %s of revenue, above %s=%s", what,
		Share(part.Events, total.Events), Share(part.RevenueMicros, total.RevenueMicros), flag, PPM(ppm))
}

// ppmCeil is part/whole in ppm rounded up (within t exactly when part*1e6 <= t*whole); 0 if whole
// <= 0.
func ppmCeil(part, whole int64) int64 {
	if whole <= 0 || part <= 0 {
		return 0
	}
	q, r := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(part), big.NewInt(1_000_000)), big.NewInt(whole), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// recommend searches bound × idle timeout × lateness (retention at its floor) for the smallest
// lateness, then bound, then idle timeout that meet the targets; else each target in order is met
// where it can be, or missed by the least.
func (an *analysis) recommend(bounds []time.Duration) {
	o := an.o
	idles := []time.Duration{o.Watermark.IdleTimeout}
	if an.l.clock != NoClock {
		idles = candidates(o.Try.Idle, o.Watermark.IdleTimeout)
	}
	latenesses := []time.Duration{o.Triggers.AllowedLateness}
	if o.Targets.TooLateSharePPM >= 0 {
		latenesses = candidates(o.Try.Lateness, o.Triggers.AllowedLateness)
	}
	ts := an.targets()
	type point struct {
		b, i, a time.Duration
		over    []int64 // per target
	}
	var points []point
	for _, b := range bounds {
		for _, i := range idles {
			for _, a := range latenesses {
				out := an.judge(an.sim(b, i), a, o.Triggers.Window+a, false, nil)
				p := point{b: b, i: i, a: a}
				for _, t := range ts {
					v, _ := t.miss(out)
					if !t.set {
						v = 0
					}
					p.over = append(p.over, v)
				}
				points = append(points, p)
			}
		}
	}
	for k := range ts {
		least := slices.MinFunc(points, func(x, y point) int { return cmp.Compare(x.over[k], y.over[k]) }).over[k]
		points = slices.DeleteFunc(points, func(p point) bool { return p.over[k] > least })
	}
	best := slices.MinFunc(points, func(x, y point) int {
		return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b), cmp.Compare(x.i, y.i))
	})
	retention := o.Triggers.Window + best.a
	out := an.judge(an.sim(best.b, best.i), best.a, retention, true, nil)
	r := Recommendation{Outcome: out, Misses: []string{}}
	for _, t := range ts {
		if v, m := t.miss(out); t.set && v > 0 {
			r.Misses = append(r.Misses, m)
		}
	}
	r.Met = len(r.Misses) == 0
	r.Flags = o.flags(best.b, best.i, best.a, retention)
	an.a.Recommendation = r
}

// flags spells settings as cmd/launch's flags.
func (o Options) flags(bound, idle, lateness, retention time.Duration) []string {
	var f []string
	if o.Triggers.Window != time.Hour {
		f = append(f, "--window="+cli.FormatDuration(o.Triggers.Window))
	}
	f = append(f, "--ooo-bound="+cli.FormatDuration(bound), "--idle-timeout="+cli.FormatDuration(idle))
	if o.Watermark.IdleAdvance != watermark.AdvanceProcessingTime {
		f = append(f, "--idle-advance="+o.Watermark.IdleAdvance.String())
	}
	f = append(f, "--allowed-lateness="+cli.FormatDuration(lateness),
		"--dedup-retention="+cli.FormatDuration(retention))
	if len(o.Event.Dimensions) > 0 {
		f = append(f, "--dimensions="+strings.Join(o.Event.Dimensions, ","))
	}
	return f
}

// Share renders part/whole in percent with two decimals ("—" when whole is not positive).
func Share(part, whole int64) string {
	if whole <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(part)/float64(whole))
}

// PPM renders a target share: "1%", "0.5%".
func PPM(ppm int64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", float64(ppm)/10_000), "0"), ".") + "%"
}
