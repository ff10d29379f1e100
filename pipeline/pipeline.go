// Package pipeline builds the streaming revenue graph from a typed options
// struct. It parses no flags and opens no sources or sinks: cmd/launch and the
// tests wire those around Build.
package pipeline

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/internal/clock"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

// DefaultShards is the number of dedup state keys on prism, where fewer is
// faster (211,150 records: 8 shards 2.9 s, 64 shards 4.2 s, 256 shards 8.9 s).
const DefaultShards = 8

// DefaultDesignRate is the peak events/s shards are sized for off prism (SPEC §1).
const DefaultDesignRate = 20_000

// TargetShardBytes is the live dedup state a shard is sized for: with lazy
// compaction and uneven ids, 24 MiB stays under SPEC §8's 64 MB.
const TargetShardBytes = 24 << 20

// shardsFor returns the dedup shard count: DefaultShards on prism, else the
// power of two keeping a shard's ids (rate × (retention + window)) within
// TargetShardBytes.
func shardsFor(runner string, rate int, retention, window time.Duration) int {
	if capability.IsPrism(runner) {
		return DefaultShards
	}
	if rate <= 0 {
		rate = DefaultDesignRate
	}
	ids := float64(rate) * (retention + window).Seconds()
	n := 1
	for float64(n)*TargetShardBytes < ids*transforms.DedupStateBytesPerID {
		n *= 2
	}
	return max(n, DefaultShards)
}

// dedupCacheFor returns a runner's default --dedup-cache: on prism
// transforms.DefaultDedupCacheBytes, elsewhere what a worker's ceil(shards /
// workers) decoded shards of rate × kept / shards ids hold, rounded up to a
// GiB (workers <= 0: one owns all; docs/capacity.md).
func dedupCacheFor(runner string, rate, shards, workers int, kept time.Duration) int {
	if capability.IsPrism(runner) || shards <= 0 {
		return transforms.DefaultDedupCacheBytes
	}
	if rate <= 0 {
		rate = DefaultDesignRate
	}
	owned := shards
	if workers > 0 {
		owned = (shards + workers - 1) / workers
	}
	ids := float64(rate) * kept.Seconds() / float64(shards) * float64(owned)
	gib := math.Ceil(ids * transforms.DedupCacheBytesPerID / (1 << 30))
	return max(int(gib)<<30, transforms.DefaultDedupCacheBytes)
}

// Stream is the settings the rows depend on (SPEC §2): validation, the watermark, windows and
// firings, and how long dedup remembers an id. Launch, reconcile and advise take them with the same
// flags (cli.Stream).
type Stream struct {
	Event     event.Config
	Watermark watermark.Policy
	Triggers  triggers.Policy
	// DedupRetention defaults to window + allowed lateness; shorter is refused.
	DedupRetention time.Duration
}

// Retention is how long dedup remembers an id: --dedup-retention, or window + allowed lateness.
func (s Stream) Retention() time.Duration { return cmp.Or(s.DedupRetention, s.Triggers.Lifetime()) }

// Options are the settings of SPEC §2 and §3, validated together.
type Options struct {
	Stream
	// DedupShards is the number of dedup state keys (DefaultShards when 0).
	DedupShards int
	// DesignRate is the peak events/s shards are sized for off prism.
	DesignRate int
	// DedupOrder is OrderArrival or OrderPosition (held until the watermark).
	DedupOrder string
	// EarlySource is EarlyTimer or EarlyImpulse (runners without
	// processing-time timers).
	EarlySource string
	// DedupCacheBytes bounds the process cache of decoded dedup shards.
	DedupCacheBytes int
	// Published is the sink the revision step continues each key's changelog
	// from (zero: nothing held).
	Published sink.Spec
	// PublishedBound limits Published to the windows this run can reach.
	PublishedBound sink.SeedBound
	// NoDedupCache reloads shards from state for every batch (tests, diagnosis).
	NoDedupCache bool
	// ReadAhead names the job's read-ahead account (flow.ReadAhead); "": none.
	ReadAhead string
}

// Defaults returns the documented defaults (SPEC §2, §6).
func Defaults() Options {
	return Options{Stream: Stream{
		Event:     event.DefaultConfig(),
		Watermark: watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute},
		Triggers:  triggers.Policy{Window: time.Hour, Early: time.Minute, AllowedLateness: 24 * time.Hour},
	}}
}

// Sized fills the dedup sizes left at zero for a runner's workers: the shards for the design rate
// and, off prism, the cache a worker needs for its share of them, each id kept for the retention,
// the window whose expiry is next and the watermark's lag (workers <= 0: one owns all;
// docs/capacity.md). On prism the cache stays 0, transforms' default.
func (o Options) Sized(runner string, workers int) Options {
	d := o.WithDefaults()
	if o.DedupShards == 0 {
		o.DedupShards = shardsFor(runner, o.DesignRate, d.DedupRetention, d.Triggers.Window)
	}
	if o.DedupCacheBytes == 0 && !capability.IsPrism(runner) {
		kept := d.DedupRetention + d.Triggers.Window + d.Watermark.OutOfOrderBound
		o.DedupCacheBytes = dedupCacheFor(runner, o.DesignRate, o.DedupShards, workers, kept)
	}
	return o
}

// WithDefaults fills the derived settings.
func (o Options) WithDefaults() Options {
	o.DedupRetention, o.DedupShards = o.Retention(), cmp.Or(o.DedupShards, DefaultShards)
	return o
}

// RunConfig is the sink's run_config (SPEC §5): the settings that shape the keys, in the flags'
// formats, written by cmd/launch and checked by cmd/reconcile.
func RunConfig(e event.Config, t triggers.Policy) map[string]string {
	return map[string]string{
		"window":           t.Window.String(),
		"dimensions":       strings.Join(e.Dimensions, ","),
		"allowed_lateness": t.AllowedLateness.String(),
	}
}

// Dedup orders (--dedup-order).
const (
	OrderArrival  = "arrival"
	OrderPosition = "position"
)

// EARLY sources (--early-source).
const (
	EarlyTimer   = "timer"
	EarlyImpulse = "impulse"
)

// EarlySourceFor is a runner's default --early-source: timers where its
// capability profile has processing-time timers, else the periodic impulse.
func EarlySourceFor(runner string) string {
	if capability.For(runner).Has(capability.ProcessingTimeTimers) {
		return EarlyTimer
	}
	return EarlyImpulse
}

// DedupOrderFor is the default --dedup-order of a runner.
func DedupOrderFor(runner string) string {
	if capability.IsPrism(runner) {
		return OrderArrival
	}
	return OrderPosition
}

// Validate checks every setting, each error naming its flag.
func (o Options) Validate() error {
	o = o.WithDefaults()
	errs := []error{o.Event.Validate(), o.Watermark.Validate(), o.Triggers.Validate(), o.dedup().Validate(),
		oneOf("--dedup-order", o.DedupOrder, OrderArrival, OrderPosition),
		oneOf("--early-source", o.EarlySource, EarlyTimer, EarlyImpulse)}
	if o.Published.Scheme != "" {
		// Refuse a binary without the backend now rather than in every Setup.
		if _, err := sink.Lookup(o.Published.Scheme); err != nil {
			errs = append(errs, fmt.Errorf("--sink: %w", err))
		}
	}
	return errors.Join(errs...)
}

// oneOf refuses a set value other than a or b.
func oneOf(flag, v, a, b string) error {
	if v != "" && v != a && v != b {
		return fmt.Errorf("%s must be %s or %s, got %q", flag, a, b, v)
	}
	return nil
}

func (o Options) dedup() transforms.DedupOptions {
	return transforms.DedupOptions{
		Policy:     o.Triggers,
		Retention:  o.DedupRetention.Milliseconds(),
		Shards:     o.DedupShards,
		Bound:      o.Watermark.OutOfOrderBound.Milliseconds(),
		NoCache:    o.NoDedupCache,
		CacheBytes: int64(o.DedupCacheBytes),
		ByPosition: o.DedupOrder == OrderPosition,
		ReadAhead:  o.ReadAhead,
	}
}

// Outputs are the four streams a sink persists.
type Outputs struct {
	Rows        beam.PCollection // model.Row
	TooLate     beam.PCollection // model.TooLate
	Conflicts   beam.PCollection // model.Conflict
	Quarantined beam.PCollection // model.Quarantined
}

// Build reads like the design card: admit (verdicts and too-late rule (a)),
// dedup (behind the watermark gate's rule (b)), combine per window and dims,
// assign revisions.
func Build(s beam.Scope, records beam.PCollection, o Options) (Outputs, error) {
	return BuildWithTicks(s, records, beam.PCollection{}, o)
}

// earlyBuckets spreads the impulse-driven EARLY source's dirty keys.
const earlyBuckets = 16

// BuildWithTicks is Build with the EARLY refresh driven by ticks (any element
// type; tests use a TestStream) when ticks is valid.
func BuildWithTicks(s beam.Scope, records, ticks beam.PCollection, o Options) (Outputs, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return Outputs{}, fmt.Errorf("pipeline options: %w", err)
	}
	s = s.Scope("HourlyRevenue")
	admitted := transforms.Admit(s, records, transforms.AdmitOptions{
		Event: o.Event, Bound: o.Watermark.OutOfOrderBound, Policy: o.Triggers, ReadAhead: o.ReadAhead,
	})
	counted, conflicts, lateB := transforms.Dedup(s, admitted, o.dedup())
	// Audit records read back the raw lines dropped before dedup.
	conflicts, lateB = transforms.Payloads(s, o.Event, conflicts, lateB)
	deltas := transforms.PreAggregate(s, counted)
	if o.Triggers.Early > 0 {
		if !ticks.IsValid() && o.EarlySource == EarlyImpulse {
			ticks = clock.Ticks(s, o.Triggers.Early)
		}
		if ticks.IsValid() {
			deltas = beam.Flatten(s, deltas, transforms.EarlyTicksFrom(s, deltas, ticks, earlyBuckets))
		} else {
			deltas = beam.Flatten(s, deltas, transforms.EarlyTicks(s, deltas, o.Triggers))
		}
	}
	rows := transforms.Revisions(s, deltas, o.Triggers, o.Published, o.PublishedBound)
	return Outputs{
		Rows:        rows,
		TooLate:     beam.Flatten(s, admitted.TooLate, lateB),
		Conflicts:   conflicts,
		Quarantined: admitted.Quarantined,
	}, nil
}
