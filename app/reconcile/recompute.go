package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"
	"unique"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/triggers"
)

// Namespace is the metrics namespace of the reconcile pipeline.
const Namespace = "reconcile"

func init() {
	register.DoFn6x1[context.Context, int, func(*evidenceBatch) bool, func(*copyBatch) bool, func(string, Totals), func(Stats), error](&chooseFn{})
	register.Iter1[evidenceBatch]()
	register.Iter1[copyBatch]()
	register.Emitter2[string, Totals]()
	register.Function1x2[evidenceBatch, int, evidenceBatch](keyEvidence)
	register.Function2x2[Totals, Totals, Totals, error](mergeTotals)
	register.Function2x1[Stats, Stats, Stats](mergeStats)
	register.DoFn4x1[context.Context, string, func(int, copyBatch), func(Stats), error](&scanFn{})
	register.Emitter2[int, copyBatch]()
	register.Emitter1[Stats]()
}

// DefaultShards is the number of choice keys: the stream's dedup spread.
const DefaultShards = 64

// Settings configure the recomputation: the stream's validation, watermark and window settings
// (Options.Validate checks them).
type Settings struct {
	// Source is the raw-log folder (--source); every worker must be able to read it.
	Source string
	// The stream's settings: Triggers gives --window and --allowed-lateness (early firings play
	// no part); DedupRetention is validated as launch does, and plays no part either (a
	// recomputation remembers every id).
	pipeline.Stream
	// Now is the fixed processing time of the future_event_time check; Run fills a zero one with
	// the start of the run.
	Now time.Time
	// Shards is the number of choice keys (--shards; DefaultShards when 0).
	Shards int
	// StreamFuture lists the positions of Stats.StreamFuture (Run reads them from the sink).
	StreamFuture []string
}

// Recompute reads every partition with the stream's rules, keeps one payload per event_id (Choice,
// given StreamEvidence's evidence) and sums revenue and count per window and dims. totals is
// PCollection<KV<string, Totals>> keyed by transforms.WindowKey; stats is a single Stats.
func Recompute(s beam.Scope, partitions, evidence beam.PCollection, o Settings) (totals, stats beam.PCollection) {
	s = s.Scope("Recompute")
	// Create hands every partition to one bundle: the Reshuffle spreads them over workers.
	o.Shards = cmp.Or(o.Shards, DefaultShards)
	copies, readStats := beam.ParDo2(s, &scanFn{Settings: o}, beam.Reshuffle(s, partitions))
	keyed := beam.ParDo(s, keyEvidence, evidence)
	grouped := beam.CoGroupByKey(s, keyed, copies)
	perShard, chooseStats := beam.ParDo2(s, &chooseFn{}, grouped)
	totals = beam.CombinePerKey(s, mergeTotals, perShard)
	stats = beam.Combine(s, mergeStats, beam.Flatten(s, readStats, chooseStats))
	return totals, stats
}

func keyEvidence(b evidenceBatch) (int, evidenceBatch) { return b.Shard, b }

func mergeTotals(a, b Totals) (Totals, error) {
	t, err := a.Add(b)
	if err != nil {
		return Totals{}, fmt.Errorf("reconcile: sum window totals: %w", err)
	}
	return t, nil
}

func mergeStats(a, b Stats) Stats { return a.Merge(b) }

// evidenceItems bounds an evidence batch, like batchCopies for copies.
const evidenceItems = 4096

// StreamEvidence brings the stream's audit rows, read by the driver, into the pipeline.
func StreamEvidence(s beam.Scope, conflicts []model.Conflict, tooLate []model.TooLate, shards int) beam.PCollection {
	return beam.CreateList(s.Scope("StreamEvidence"), evidenceBatches(conflicts, tooLate, shards))
}

// evidenceBatches puts each audit row in its event_id's shard. Of several conflict rows for one id
// the lowest position's counts: the stream published that count first.
func evidenceBatches(conflicts []model.Conflict, tooLate []model.TooLate, shards int) []evidenceBatch {
	shards = cmp.Or(max(shards, 0), DefaultShards)
	perShard := make([]evidenceBatch, shards)
	var out []evidenceBatch
	add := func(id string, put func(*evidenceBatch)) {
		i := transforms.ShardOf(id, shards)
		b := &perShard[i]
		b.Shard = i
		if put(b); len(b.Conflicts)+len(b.TooLate) >= evidenceItems {
			out, *b = append(out, *b), evidenceBatch{}
		}
	}
	for _, c := range conflicts {
		add(c.EventID, func(b *evidenceBatch) {
			b.Conflicts = append(b.Conflicts, streamConflict{c.EventID, c.Position, c.FirstFingerprint})
		})
	}
	for _, t := range tooLate {
		add(t.EventID, func(b *evidenceBatch) { b.TooLate = append(b.TooLate, t.Position) })
	}
	for _, b := range perShard {
		if len(b.Conflicts)+len(b.TooLate) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// chooseFn picks each id's payload in one shard and emits the shard's per-window sums.
type chooseFn struct {
	ids, conflicting beam.Counter
}

func (f *chooseFn) Setup() {
	f.ids = beam.NewCounter(Namespace, "ids")
	f.conflicting = beam.NewCounter(Namespace, "conflicting_ids")
}

func (f *chooseFn) ProcessElement(ctx context.Context, shard int, evidence func(*evidenceBatch) bool, copies func(*copyBatch) bool,
	emit func(string, Totals), stats func(Stats)) error {
	// Evidence first: with it known, each id needs only its best copy.
	counted := map[string]streamConflict{}
	tooLate := map[string]bool{}
	var eb evidenceBatch
	for evidence(&eb) {
		for _, c := range eb.Conflicts {
			if prev, ok := counted[c.EventID]; !ok || rawlog.ComparePositions(c.Position, prev.Position) < 0 {
				counted[c.EventID] = c
			}
		}
		for _, p := range eb.TooLate {
			tooLate[p] = true
		}
	}

	choices := map[string]*Choice{}
	future := map[string]Copy{} // per id, the lowest position's
	var cb copyBatch
	for copies(&cb) {
		for _, c := range cb.Copies {
			if c.Future {
				if p, ok := future[c.EventID]; !ok || rawlog.ComparePositions(c.Position, p.Position) < 0 {
					future[c.EventID] = c
				}
				continue
			}
			ch, ok := choices[c.EventID]
			if !ok {
				ch = &Choice{}
				choices[c.EventID] = ch
			}
			sc, has := counted[c.EventID]
			ch.Add(c, sc.FirstFingerprint, has, tooLate[c.Position])
		}
	}

	var st Stats
	sums := map[string]Totals{}
	for _, ch := range choices {
		st.count(*ch)
		k := transforms.WindowKey(ch.Best.WindowStart, ch.Best.Dims)
		t, err := sums[k].Add(ch.Totals())
		if err != nil {
			return fmt.Errorf("reconcile: shard %d: window %s %s: %w", shard, model.FormatTime(ch.Best.WindowStart), ch.Best.Dims, err)
		}
		sums[k] = t
	}
	for id, c := range future {
		if k := transforms.WindowKey(c.WindowStart, c.Dims); choices[id] == nil {
			sums[k], _ = sums[k].Add(Totals{Future: []int64{c.AmountMicros}}) // adds no revenue: no error
		}
	}
	// A deterministic order makes reruns of a shard emit the same sequence.
	for _, k := range slices.Sorted(maps.Keys(sums)) {
		emit(k, sums[k])
	}
	f.ids.Inc(ctx, st.IDs)
	f.conflicting.Inc(ctx, st.ConflictingIDs)
	stats(st)
	return nil
}

// Totals are a window key's recomputed sums.
type Totals struct {
	// RevenueMicros and Count cover every distinct valid event.
	RevenueMicros, Count int64
	// TooLateRevenueMicros and TooLateCount are the part the stream judged too late and never
	// counted.
	TooLateRevenueMicros, TooLateCount int64
	// Future holds, sorted, the amount of each id with no valid copy but one the stream quarantined
	// as future_event_time: a restart may have counted it since. Not in the sums above.
	Future []int64 `json:",omitempty"`
}

// Add sums two totals exactly, refusing to wrap around.
func (t Totals) Add(o Totals) (Totals, error) {
	var err error
	if t.RevenueMicros, err = triggers.AddMicros(t.RevenueMicros, o.RevenueMicros); err != nil {
		return Totals{}, err
	}
	if t.TooLateRevenueMicros, err = triggers.AddMicros(t.TooLateRevenueMicros, o.TooLateRevenueMicros); err != nil {
		return Totals{}, err
	}
	t.Count += o.Count
	t.TooLateCount += o.TooLateCount
	t.Future = append(slices.Clip(t.Future), o.Future...)
	slices.Sort(t.Future)
	return t, nil
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
	flush := func(shard int) {
		emit(shard, copyBatch{Copies: buf[shard]})
		buf[shard] = nil // the runner may still hold the emitted slice
	}
	info, err := rawlog.Scan(f.Source, partition, f.Event.MaxLine, f.Now.UnixMilli(), func(rec model.Record) error {
		st.Read++
		future := f.skip[rec.Position]
		var (
			ev model.Event
			q  *model.Quarantined
		)
		if future {
			// Not stamped: the stream's Stamper never let it move the watermark. Parsed as if read
			// now, with no watermark: a restart may have counted it since (Totals.Future).
			st.StreamFuture++
			st.Quarantined[model.ReasonFutureEventTime]++
			rec.ReadAt, rec.WatermarkBefore = math.MaxInt64, model.NoWatermark
			ev, q = event.Parse(rec, f.Event)
		} else if ev, q = stamper.Stamp(&rec); q != nil {
			st.Quarantined[q.Reason]++
		} else {
			st.Valid++
		}
		if q != nil {
			return nil
		}
		// Nothing here aliases the reused line buffer.
		shard := transforms.ShardOf(ev.EventID, f.Shards)
		buf[shard] = append(buf[shard], Copy{
			EventID:      ev.EventID,
			Position:     rec.Position,
			Fingerprint:  ev.Fingerprint,
			WindowStart:  f.Triggers.WindowStart(ev.EventTime),
			Dims:         unique.Make(ev.Dims).Value(), // one string per distinct dims value
			AmountMicros: ev.AmountMicros,
			Future:       future,
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

// Hand-written coders on package coders' wire, registered with generated callers: copy batches
// dominate the shuffle.
func init() {
	coders.Register(encodeCopyBatch, decodeCopyBatch)
	coders.Register(encodeTotals, decodeTotals)
	// Evidence (the stream's audit rows, far fewer than the copies), Stats and Comparison: JSON.
	beam.RegisterCoder(reflect.TypeOf((*evidenceBatch)(nil)).Elem(), encodeEvidenceBatch, decodeEvidenceBatch)
	beam.RegisterCoder(reflect.TypeOf((*Stats)(nil)).Elem(), encodeStats, decodeStats)
	beam.RegisterCoder(reflect.TypeOf((*Comparison)(nil)).Elem(), encodeComparison, decodeComparison)
}

// copyBatch carries one shard's copies from a partition read to the choice.
type copyBatch struct {
	Copies []Copy
}

// evidenceBatch carries the stream's verdicts about one shard's ids.
type evidenceBatch struct {
	Shard     int
	Conflicts []streamConflict
	// TooLate holds positions of too_late_events rows.
	TooLate []string
}

// streamConflict is the part of a conflict_events row the choice needs.
type streamConflict struct {
	EventID, Position string
	FirstFingerprint  uint64
}

func encodeCopyBatch(b copyBatch) []byte {
	w := coders.Writer{B: make([]byte, 0, 64*len(b.Copies)+4)}
	w.Uvarint(uint64(len(b.Copies)))
	for i := range b.Copies {
		c := &b.Copies[i]
		w.String(c.EventID)
		w.String(c.Position)
		w.Fixed64(c.Fingerprint)
		w.Varint(c.WindowStart)
		w.String(c.Dims)
		w.Varint(c.AmountMicros)
		w.Bool(c.Future)
	}
	return w.B
}

func decodeCopyBatch(data []byte) (copyBatch, error) {
	r := coders.Reader{B: data}
	n := r.Count(14)
	b := copyBatch{Copies: make([]Copy, 0, n)}
	for i := 0; i < n && r.Err == nil; i++ {
		// Dims repeat across a batch: share one string per distinct value.
		b.Copies = append(b.Copies, Copy{EventID: r.String(), Position: r.String(), Fingerprint: r.Fixed64(), WindowStart: r.Varint(),
			Dims: unique.Make(r.String()).Value(), AmountMicros: r.Varint(), Future: r.Bool()})
	}
	return coders.Done(b, &r, "copy batch")
}

func encodeTotals(t Totals) []byte {
	w := coders.Writer{B: make([]byte, 0, 24)}
	w.Varint(t.RevenueMicros)
	w.Varint(t.Count)
	w.Varint(t.TooLateRevenueMicros)
	w.Varint(t.TooLateCount)
	w.Uvarint(uint64(len(t.Future)))
	for _, a := range t.Future {
		w.Varint(a)
	}
	return w.B
}

func decodeTotals(data []byte) (Totals, error) {
	r := coders.Reader{B: data}
	t := Totals{RevenueMicros: r.Varint(), Count: r.Varint(), TooLateRevenueMicros: r.Varint(), TooLateCount: r.Varint()}
	for n := r.Count(1); n > 0 && r.Err == nil; n-- {
		t.Future = append(t.Future, r.Varint())
	}
	return coders.Done(t, &r, "totals")
}

// Named functions, not generic ones: Beam resolves coder functions by name on the workers.
func encodeEvidenceBatch(b evidenceBatch) ([]byte, error) { return json.Marshal(b) }
func decodeEvidenceBatch(b []byte) (evidenceBatch, error) {
	return decodeJSON[evidenceBatch](b, "evidence batch")
}
func encodeStats(s Stats) ([]byte, error)           { return json.Marshal(s) }
func decodeStats(b []byte) (Stats, error)           { return decodeJSON[Stats](b, "stats") }
func encodeComparison(c Comparison) ([]byte, error) { return json.Marshal(c) }
func decodeComparison(b []byte) (Comparison, error) { return decodeJSON[Comparison](b, "comparison") }

func decodeJSON[T any](data []byte, what string) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("decode %s: %w", what, err)
	}
	return v, nil
}
