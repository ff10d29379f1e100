package reconcile

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/transforms"
)

func init() {
	register.DoFn4x1[context.Context, string, func(int, copyBatch), func(Stats), error](&scanFn{})
	register.Emitter2[int, copyBatch]()
	register.Emitter1[Stats]()
}

// batchCopies bounds a shard's buffer: memory stays at shards × batchCopies per partition.
const batchCopies = 2048

// scanFn reads one partition in arrival order with the file source's rules (rawlog.Scan,
// rawlog.Stamper, event.Parse) and sends each valid copy to its event_id's shard
// (transforms.ShardOf). A partition is one element: --max-age judges each record against the
// watermark of those before it.
type scanFn struct {
	Settings // Shards set

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
	stamper := rawlog.NewStamper(f.Watermark, f.Event, f.Now.UnixMilli())
	buf := make([][]Copy, f.Shards)
	dims := map[string]string{} // one string per distinct dims value
	flush := func(shard int) {
		emit(shard, copyBatch{Copies: buf[shard]})
		buf[shard] = nil // the runner may still hold the emitted slice
	}
	info, err := rawlog.Scan(f.Source, partition, f.Event.MaxLine, f.Now.UnixMilli(), func(rec model.Record) error {
		st.Read++
		if f.skip[rec.Position] {
			// Not stamped: the stream's Stamper never let it move the watermark.
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
		// Nothing here aliases the reused line buffer.
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
