// Package pipeline builds the streaming revenue graph from a typed options
// struct. It parses no flags and opens no sources or sinks: cmd/launch and the
// tests wire those around Build.
package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/internal/clock"
	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

// DefaultShards is the number of dedup state keys on prism. Each shard costs
// a state key, three timers per window and a bundle slot, so on one machine
// fewer is faster (measured on prism, 211,150 records: 2 shards 2.7 s,
// 8 shards 2.9 s, 16 shards 3.2 s, 64 shards 4.2 s, 256 shards 8.9 s). On a
// distributed runner ShardsFor sizes them from the design rate instead.
const DefaultShards = 8

// DefaultDesignRate is the peak input rate (events/s) distributed runners'
// dedup shards are sized for (SPEC §1).
const DefaultDesignRate = 20_000

// TargetShardBytes is the live dedup state one shard key is sized to hold at
// the design rate: lazy compaction lets a key's bag reach twice its live
// ids, and ids do not spread perfectly evenly, so 24 MiB live keeps every key
// and value under SPEC §8's 64 MB.
const TargetShardBytes = 24 << 20

// ShardsFor returns the dedup shard count for a runner: DefaultShards on
// prism (one machine, where fewer keys are faster), else the power of two
// that keeps a shard's remembered ids within TargetShardBytes at rate
// events/s over the retention (plus the window ids are kept beyond it).
func ShardsFor(runner string, rate int, retention, window time.Duration) int {
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

// DedupCacheFor returns the default --dedup-cache of a runner: on prism
// transforms.DefaultDedupCacheBytes (one process holds every shard of a
// replay, and a miss there reloads from prism's own heap); elsewhere what
// the decoded shards a worker owns hold, so that a shard is read from the
// runner's state once, not for every batch: ceil(shards / workers) shards
// of rate × kept / shards ids each (kept: how long an id stays, the
// retention plus a window plus the out-of-order bound the expiry timers
// wait behind), transforms.DedupCacheBytesPerID an id, rounded up to a
// whole GiB and at least the prism default. workers <= 0 (the submission
// states no worker count) sizes it for one worker owning every shard: the
// cache takes only what the worker owns, and the workers' memory limit
// caps it (transforms.MemoryLimitFor, docs/capacity.md).
func DedupCacheFor(runner string, rate, shards, workers int, kept time.Duration) int {
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

// Options are the settings of SPEC §2 and §3, validated together.
type Options struct {
	Event     event.Config
	Watermark watermark.Policy
	Triggers  triggers.Policy
	// DedupRetention defaults to window + allowed lateness; shorter is refused.
	DedupRetention time.Duration
	// DedupShards is the number of dedup state keys: DefaultShards when 0;
	// the launcher sets ShardsFor(runner, DesignRate, ...) off prism.
	DedupShards int
	// DesignRate is the peak events/s the dedup shards are sized for off
	// prism (DefaultDesignRate when 0).
	DesignRate int
	// DedupOrder is how the dedup step orders a key's elements before
	// judging them: OrderArrival (prism's default: prism delivers them in
	// timestamp, then arrival order) or OrderPosition (held until the
	// watermark, then judged in source-position order; the launcher's
	// default off prism).
	DedupOrder string
	// EarlySource drives the EARLY refresh: EarlyTimer (processing-time
	// timers) or EarlyImpulse (a periodic impulse; for the portable Flink
	// runner, which fires no processing-time timers for Go).
	EarlySource string
	// DedupCacheBytes bounds the process-wide cache of decoded dedup shards
	// (transforms.DefaultDedupCacheBytes when 0); the launcher sets
	// DedupCacheFor(runner, ...) off prism. A worker caps it at what its
	// memory limit leaves (transforms.MemoryLimitFor).
	DedupCacheBytes int
	// Published is the sink whose rows the revision step reads when it
	// starts, on the worker (sink.Published): it continues each key's
	// changelog from them, and a window held as FINAL stays closed (SPEC
	// §4). The zero Spec: the sink holds nothing.
	Published sink.Spec
	// PublishedBound limits the rows read from Published to the windows
	// this run can still reach (the launcher's resume rule); the zero value
	// reads every row.
	PublishedBound sink.SeedBound
	// NoDedupCache makes the dedup step reload its shards from the runner's
	// state for every batch instead of trusting its process cache, as on a
	// runner that moves keys between workers (tests, diagnosis).
	NoDedupCache bool
	// ReadAhead names the job's read-ahead account on the embedded runner
	// (flow.ReadAhead): the sources count the valid records they read
	// into it and read against it, the too-late gate and the dedup step
	// count out what they take in; "" bounds nothing (a runner with its own
	// flow control).
	ReadAhead string
}

// Defaults returns the documented defaults (SPEC §2, §6).
func Defaults() Options {
	return Options{
		Event:     event.DefaultConfig(),
		Watermark: watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute},
		Triggers:  triggers.Policy{Window: time.Hour, Early: time.Minute, AllowedLateness: 24 * time.Hour},
	}
}

// WithDefaults fills the derived settings.
func (o Options) WithDefaults() Options {
	if o.DedupRetention == 0 {
		o.DedupRetention = o.Triggers.Window + o.Triggers.AllowedLateness
	}
	if o.DedupShards == 0 {
		o.DedupShards = DefaultShards
	}
	return o
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

// EarlySourceFor is the default --early-source of a runner, from its
// capability profile: processing-time timers where the runner fires them
// (prism, Dataflow), else the periodic impulse, which is also what an
// unknown job server (--runner=universal, the way Flink users submit) gets.
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
	var order error
	if o.DedupOrder != "" && o.DedupOrder != OrderArrival && o.DedupOrder != OrderPosition {
		order = fmt.Errorf("--dedup-order must be %s or %s, got %q", OrderArrival, OrderPosition, o.DedupOrder)
	}
	var early error
	if o.EarlySource != "" && o.EarlySource != EarlyTimer && o.EarlySource != EarlyImpulse {
		early = fmt.Errorf("--early-source must be %s or %s, got %q", EarlyTimer, EarlyImpulse, o.EarlySource)
	}
	var published error
	if o.Published.Scheme != "" {
		// The workers read it (sink.Published) through the backend the
		// binary registered: refuse a binary without one before any work,
		// rather than fail every worker's Setup.
		if err := sink.CheckRegistered(o.Published.Scheme); err != nil {
			published = fmt.Errorf("--sink: %w", err)
		}
	}
	return errors.Join(o.Event.Validate(), o.Watermark.Validate(), o.Triggers.Validate(), o.dedup().Validate(), order, early, published)
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

// Build reads like the design card: validate, gate too-late records, dedup
// (whose audit records read their payloads back from the raw log), combine
// per window and dims, assign revisions.
func Build(s beam.Scope, records beam.PCollection, o Options) (Outputs, error) {
	return BuildWithTicks(s, records, beam.PCollection{}, o)
}

// earlyBuckets spreads the impulse-driven EARLY source's dirty keys.
const earlyBuckets = 16

// BuildWithTicks is Build with the EARLY refresh driven by ticks (any
// element type) instead of processing-time timers, when ticks is valid:
// tests drive it from a TestStream. Otherwise, with EarlySource
// EarlyImpulse, a periodic impulse every --early drives it.
func BuildWithTicks(s beam.Scope, records, ticks beam.PCollection, o Options) (Outputs, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return Outputs{}, fmt.Errorf("pipeline options: %w", err)
	}
	s = s.Scope("HourlyRevenue")
	events, quarantined := transforms.Validate(s, records, o.Event, o.Watermark.OutOfOrderBound)
	open, lateA := transforms.TooLate(s, events, o.Triggers, o.ReadAhead)
	counted, conflicts, lateB := transforms.Dedup(s, open, o.dedup())
	// Events entered dedup without the raw lines the raw log holds: its
	// audit records read theirs back.
	conflicts, lateB = transforms.Payloads(s, o.Event, conflicts, lateB)
	deltas := transforms.PreAggregate(s, counted, o.Triggers)
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
		TooLate:     beam.Flatten(s, lateA, lateB),
		Conflicts:   conflicts,
		Quarantined: quarantined,
	}, nil
}
