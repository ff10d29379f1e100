package advise

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/watermark"
)

// Advice is everything the advisor found.
type Advice struct {
	Options Options `json:"-"`
	// Settings are the job's current settings as cmd/launch flags.
	Settings []string   `json:"current_settings"`
	Log      LogSummary `json:"log"`
	// Lateness is the measured event lateness of every valid record.
	Lateness Distribution `json:"event_lateness"`
	// Bounds, LatenessTable, Retention and Idle try each candidate of one setting, the others kept.
	Bounds         []Outcome      `json:"ooo_bound"`
	LatenessTable  []Outcome      `json:"allowed_lateness"`
	Retention      []RetentionRow `json:"dedup_retention"`
	Copies         CopyStats      `json:"copies"`
	Idle           []IdleRow      `json:"idle_timeout"`
	Silences       []Silences     `json:"silences"`
	Recommendation Recommendation `json:"recommendation"`
	// Job is what the stream itself measured (--job-report), or nil.
	Job *JobFigures `json:"job,omitempty"`
}

// LogSummary describes the replayed log.
type LogSummary struct {
	Source     string   `json:"source"`
	Partitions []string `json:"partitions"`
	// Segments are the segment keys (canonical JSON objects), by index.
	Segments []string `json:"segments"`
	Clock    string   `json:"arrival_clock"`
	// Read counts records, Valid the valid ones; Quarantined splits the rest by reason.
	Read        int64            `json:"read"`
	Valid       int64            `json:"valid"`
	Blank       int64            `json:"blank"`
	Quarantined map[string]int64 `json:"quarantined_by_reason"`
	// NoArrival counts records whose arrival was taken from their neighbours.
	NoArrival int64 `json:"records_without_arrival"`
	IDs       int   `json:"distinct_event_ids"`
	// First and Last arrival (epoch ms; 0 without a clock).
	First int64 `json:"first_arrival_ms"`
	Last  int64 `json:"last_arrival_ms"`
}

// Distribution is an exact distribution of delays (ms) and its counts in internal/delay's buckets.
type Distribution struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50_ms"`
	P90   int64 `json:"p90_ms"`
	P95   int64 `json:"p95_ms"`
	P99   int64 `json:"p99_ms"`
	Max   int64 `json:"max_ms"`
	// Buckets counts the values in internal/delay's buckets.
	Buckets []int64 `json:"delay_buckets"`
}

// newDistribution summarises values, sorting them in place.
func newDistribution(values []int64) Distribution {
	e := delay.ExactOf(values)
	d := Distribution{Count: int64(len(values)), Buckets: e.Buckets()}
	if len(values) > 0 {
		d.P50, d.P90, d.P95, d.P99 = e.Percentile(50), e.Percentile(90), e.Percentile(95), e.Percentile(99)
		d.Max = values[len(values)-1]
	}
	return d
}

// Analyze reads the log and computes the advice.
func Analyze(ctx context.Context, o Options) (*Advice, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	l, err := readLog(ctx, o)
	if err != nil {
		return nil, err
	}
	a := &Advice{Options: o, Log: l.LogSummary,
		Settings: o.flags(o.Watermark.OutOfOrderBound, o.Watermark.IdleTimeout, o.Triggers.AllowedLateness, o.Retention())}
	values := measuredLateness(l)
	a.Lateness = newDistribution(values)
	an := analysis{l: l, o: o, a: a, pctBounds: percentileBounds(delay.ExactOf(values), o.Try.LatenessPercentiles)}
	if err := an.run(ctx); err != nil {
		return nil, err
	}
	if o.JobReport != "" {
		if a.Job, err = readJobReport(o.JobReport); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// measuredLateness is each valid record's exact event lateness (the stream's metric).
func measuredLateness(l *replayLog) []int64 {
	var values []int64
	for i, before := range ownWatermarks(l, watermark.Policy{IdleTimeout: never}) {
		if l.recs[i].valid {
			values = append(values, delay.Lateness(l.recs[i].et, before, 0))
		}
	}
	return values
}

// analysis holds the replays while the tables are computed: two at most (the current settings' and
// the last other), as they are most of the memory.
type analysis struct {
	l       *replayLog
	o       Options
	a       *Advice
	current *sim
	last    *sim
	scratch scratch
	// pctBounds are the bounds at the lateness percentiles.
	pctBounds []time.Duration
}

func (an *analysis) sim(bound, idle time.Duration) *sim {
	if an.l.clock == NoClock {
		idle = an.o.Watermark.IdleTimeout // idleness needs processing time
	}
	for _, s := range []*sim{an.current, an.last} {
		if s != nil && s.bound == bound && s.idle == idle {
			return s
		}
	}
	p := an.o.Watermark
	p.OutOfOrderBound, p.IdleTimeout = bound, idle
	an.last = nil // let it go before the next one is built
	s := replayWatermarks(an.l, p, an.o.Triggers)
	if bound == an.o.Watermark.OutOfOrderBound && idle == an.o.Watermark.IdleTimeout {
		an.current = s
	} else {
		an.last = s
	}
	return s
}

func (an *analysis) run(ctx context.Context) error {
	o, cur := an.o, an.o.Watermark
	lateness, retention := o.Triggers.AllowedLateness, o.Retention()
	bounds := candidates(append(slices.Clone(o.Try.Bounds), an.pctBounds...), cur.OutOfOrderBound)
	an.a.Bounds = slicesx.Map(bounds, func(b time.Duration) Outcome {
		return an.judge(an.sim(b, cur.IdleTimeout), lateness, retention, true, nil)
	})
	an.a.LatenessTable = slicesx.Map(candidates(o.Try.Lateness, lateness), func(al time.Duration) Outcome {
		return an.judge(an.sim(cur.OutOfOrderBound, cur.IdleTimeout), al, max(retention, o.Triggers.Window+al), false, nil)
	})
	an.retention()
	if err := ctx.Err(); err != nil {
		return err
	}
	if an.l.clock != NoClock {
		an.idle()
	}
	an.recommend(bounds)
	return ctx.Err()
}

// percentileBounds are the bounds at the measured lateness's percentiles, rounded up to a minute.
func percentileBounds(lateness delay.Exact, ps []int) []time.Duration {
	if len(lateness.Values) == 0 {
		return nil
	}
	return slicesx.Map(ps, func(p int) time.Duration {
		return (time.Duration(lateness.Percentile(p))*time.Millisecond + time.Minute - 1).Truncate(time.Minute)
	})
}

// JobFigures are what a streaming run measured itself (cmd/launch --report=run.json).
type JobFigures struct {
	Path     string            `json:"path"`
	Settings map[string]string `json:"settings"`
	// Lateness must match the advisor's own count bucket for bucket when the job read this log from
	// its start; Arrival only a live run measures.
	Lateness delay.Histogram `json:"event_lateness"`
	Arrival  delay.Histogram `json:"arrival_delay"`
	// Read, TooLate, Duplicates and Conflicts are the job's own figures.
	Read       int64 `json:"read"`
	TooLate    int64 `json:"too_late"`
	Duplicates int64 `json:"duplicates"`
	Conflicts  int64 `json:"conflicts"`
}

func readJobReport(path string) (*JobFigures, error) {
	f, err := files.Open(context.Background(), path, 0)
	if err != nil {
		return nil, fmt.Errorf("--job-report: %w", err)
	}
	defer f.Close()
	var doc report.Document
	if err := json.NewDecoder(f).Decode(&doc); err != nil {
		return nil, fmt.Errorf("--job-report %s: not a run report: %w", path, err)
	}
	if doc.Counts == nil {
		return nil, fmt.Errorf("--job-report %s: the run reported no metrics", path)
	}
	c := doc.Counts
	return &JobFigures{Path: path, Settings: doc.Settings, Lateness: c.Lateness, Arrival: c.Arrival,
		Read: c.Read, TooLate: c.TooLate, Duplicates: c.Duplicates, Conflicts: c.Conflicts}, nil
}
