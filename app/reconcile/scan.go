package reconcile

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/io/rawlog"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

func init() {
	register.DoFn4x1[context.Context, string, func(int, copyBatch), func(Stats), error](&scanFn{})
	register.Emitter2[int, copyBatch]()
	register.Emitter1[Stats]()
}

// batchCopies is how many copies a shard's buffer holds before it is sent
// on: large enough that per-element overhead vanishes, small enough that a
// partition of any size is read in bounded memory (shards × batchCopies).
const batchCopies = 2048

// scanFn reads one partition in arrival order, stamping and validating each
// record exactly as the stream's file source does (rawlog.Scan for lines and
// positions, rawlog.Stamper for the partition watermark and event.Parse),
// and sends each valid copy to the choice step's shard for its event_id
// (transforms.ShardOf, the stream's dedup sharding).
//
// A partition is one element: its records must be stamped in order, since
// --max-age judges each against the watermark of the records before it.
type scanFn struct {
	Source    string
	Event     event.Config
	Watermark watermark.Policy
	Triggers  triggers.Policy
	// ReadAt is the processing time (epoch ms) records are read at: the
	// future_event_time check is made against it.
	ReadAt int64
	Shards int
	// StreamFuture holds the positions the stream quarantined as
	// future_event_time: see Stats.StreamFuture.
	StreamFuture []string

	skip              map[string]bool
	read, quarantined beam.Counter
}

func (f *scanFn) Setup() {
	f.skip = make(map[string]bool, len(f.StreamFuture))
	for _, p := range f.StreamFuture {
		f.skip[p] = true
	}
	f.read = beam.NewCounter(Namespace, "read")
	f.quarantined = beam.NewCounter(Namespace, "quarantined")
}

func (f *scanFn) ProcessElement(ctx context.Context, partition string, emit func(int, copyBatch), stats func(Stats)) error {
	st := Stats{Partitions: 1, Quarantined: map[string]int64{}}
	stamper := rawlog.NewStamper(f.Watermark, f.Event, f.ReadAt)
	buf := make([][]Copy, f.Shards)
	dims := map[string]string{} // one string per distinct dims value
	flush := func(shard int) {
		emit(shard, copyBatch{Copies: buf[shard]})
		buf[shard] = nil // the runner may still hold the emitted slice
	}
	info, err := rawlog.Scan(f.Source, partition, f.Event.MaxLine, f.ReadAt, func(rec model.Record) error {
		st.Read++
		if f.skip[rec.Position] {
			// Not stamped either: the stream's Stamper never let this
			// record move the watermark.
			st.StreamFuture++
			st.Quarantined[model.ReasonFutureEventTime]++
			return nil
		}
		ev, q := stamper.Stamp(&rec)
		if q != nil {
			st.Quarantined[q.Reason]++
			return nil
		}
		st.Valid++
		d, ok := dims[ev.Dims]
		if !ok {
			d = ev.Dims
			dims[d] = d
		}
		// event.Parse copies the id out of the line; the position is a
		// fresh string per record. Nothing here aliases the reused buffer.
		shard := transforms.ShardOf(ev.EventID, f.Shards)
		buf[shard] = append(buf[shard], Copy{
			EventID:      ev.EventID,
			Position:     rec.Position,
			Fingerprint:  ev.Fingerprint,
			WindowStart:  f.Triggers.WindowStart(ev.EventTime),
			Dims:         d,
			AmountMicros: ev.AmountMicros,
		})
		if len(buf[shard]) == batchCopies {
			flush(shard)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reconcile: read partition %q: %w", partition, err)
	}
	for shard := range buf {
		if len(buf[shard]) > 0 {
			flush(shard)
		}
	}
	st.Files, st.Blank, st.Unterminated = int64(info.Files), int64(info.Blank), info.Unterminated
	if w := stamper.Watermark(); w != model.NoWatermark {
		st.LogWatermark, st.HasLogWatermark = w, true
	}
	f.read.Inc(ctx, st.Read)
	f.quarantined.Inc(ctx, st.QuarantinedTotal())
	stats(st)
	return nil
}
