// Package pipeline builds the streaming revenue graph from a typed options
// struct. It parses no flags and opens no sources or sinks: cmd/launch and the
// tests wire those around Build.
package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

// DefaultShards is the number of dedup state keys. Each shard costs a state
// key, three timers per window and a bundle slot, so on one machine fewer is
// faster (measured on prism, 211,150 records: 2 shards 2.7 s, 8 shards
// 2.9 s, 16 shards 3.2 s, 64 shards 4.2 s, 256 shards 8.9 s); on Flink or
// Dataflow use at least the parallelism (--dedup-shards) so dedup spreads
// over the workers.
const DefaultShards = 8

// Options are the settings of SPEC §2 and §3, validated together.
type Options struct {
	Event     event.Config
	Watermark watermark.Policy
	Triggers  triggers.Policy
	// DedupRetention defaults to window + allowed lateness; shorter is refused.
	DedupRetention time.Duration
	DedupShards    int
	// Published is the sink whose rows the revision step reads when it
	// starts, on the worker (sinks.Published): it continues each key's
	// changelog from them, and a window held as FINAL stays closed (SPEC
	// §4). The zero Spec: the sink holds nothing.
	Published sinks.Spec
	// NoDedupCache makes the dedup step reload its shards from the runner's
	// state for every batch instead of trusting its process cache, as on a
	// runner that moves keys between workers (tests, diagnosis).
	NoDedupCache bool
}

// Defaults returns the documented defaults (SPEC §2, §6).
func Defaults() Options {
	return Options{
		Event:       event.DefaultConfig(),
		Watermark:   watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: 5 * time.Minute},
		Triggers:    triggers.Policy{Window: time.Hour, Early: time.Minute, AllowedLateness: 24 * time.Hour},
		DedupShards: DefaultShards,
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

// Validate checks every setting, each error naming its flag.
func (o Options) Validate() error {
	o = o.WithDefaults()
	return errors.Join(o.Event.Validate(), o.Watermark.Validate(), o.Triggers.Validate(), o.dedup().Validate())
}

func (o Options) dedup() transforms.DedupOptions {
	return transforms.DedupOptions{
		Policy:    o.Triggers,
		Retention: o.DedupRetention.Milliseconds(),
		Shards:    o.DedupShards,
		NoCache:   o.NoDedupCache,
	}
}

// Outputs are the four streams a sink persists.
type Outputs struct {
	Rows        beam.PCollection // model.Row
	TooLate     beam.PCollection // model.TooLate
	Conflicts   beam.PCollection // model.Conflict
	Quarantined beam.PCollection // model.Quarantined
}

// Build reads like the design card: validate, gate too-late records, dedup,
// combine per window and dims, assign revisions.
func Build(s beam.Scope, records beam.PCollection, o Options) (Outputs, error) {
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return Outputs{}, fmt.Errorf("pipeline options: %w", err)
	}
	s = s.Scope("HourlyRevenue")
	events, quarantined := transforms.Validate(s, records, o.Event, o.Watermark.OutOfOrderBound)
	open, lateA := transforms.TooLate(s, events, o.Triggers)
	counted, conflicts, lateB := transforms.Dedup(s, open, o.dedup())
	deltas := transforms.PreAggregate(s, counted, o.Triggers)
	if o.Triggers.Early > 0 {
		deltas = beam.Flatten(s, deltas, transforms.EarlyTicks(s, deltas, o.Triggers))
	}
	rows := transforms.Revisions(s, deltas, o.Triggers, o.Published)
	return Outputs{
		Rows:        rows,
		TooLate:     beam.Flatten(s, lateA, lateB),
		Conflicts:   conflicts,
		Quarantined: quarantined,
	}, nil
}
