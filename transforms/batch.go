package transforms

import (
	"maps"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn4x0[beam.EventTime, model.Event, func(beam.EventTime, int, model.EventBatch), func(beam.EventTime, int64, int64)](&keyBatchFn{})
	register.Emitter3[beam.EventTime, int, model.EventBatch]()
	register.Emitter3[beam.EventTime, int64, int64]()
}

// ShardOf maps an event_id to one of n dedup shards: FNV-1a (32 bit) of the
// id, inlined because hash/fnv's hasher allocates, once per event here.
func ShardOf(eventID string, n int) int {
	const offset32, prime32 = 2166136261, 16777619
	h := uint32(offset32)
	for i := 0; i < len(eventID); i++ {
		h ^= uint32(eventID[i])
		h *= prime32
	}
	return int(h % uint32(n))
}

// BatchByKey groups a bundle's events by watermark gate key and partition, so
// state is read once per batch (the Go SDK's State API round trip per access:
// 8,900 ev/s per id against 110,000 per batch). A batch is stamped with its
// earliest timestamp, so a partition's copies of an id are judged in read
// order. The second output is KV<window start, earliest timestamp> per window,
// for AnnounceWindows.
func BatchByKey(s beam.Scope, events beam.PCollection, shards int, p triggers.Policy) (batches, windows beam.PCollection) {
	s = s.Scope("BatchByKey")
	return beam.ParDo2(s, &keyBatchFn{Shards: shards, Policy: p}, events)
}

type batchKey struct {
	shard     int
	partition string
}

type keyBatchFn struct {
	Shards int
	Policy triggers.Policy

	pending groups[batchKey, []model.Event]
	windows map[int64]beam.EventTime // window start: earliest timestamp
}

func (f *keyBatchFn) StartBundle(_ func(beam.EventTime, int, model.EventBatch), _ func(beam.EventTime, int64, int64)) {
	f.pending.reset()
	f.windows = map[int64]beam.EventTime{}
}

// ProcessElement declares the emitters FinishBundle uses (the SDK takes
// outputs from ProcessElement's signature).
func (f *keyBatchFn) ProcessElement(ts beam.EventTime, e model.Event, _ func(beam.EventTime, int, model.EventBatch), _ func(beam.EventTime, int64, int64)) {
	b := f.pending.at(batchKey{shard: ShardOf(e.EventID, f.Shards), partition: e.Partition}, ts)
	*b = append(*b, e)
	w := f.Policy.WindowStart(e.EventTime)
	if first, ok := f.windows[w]; !ok || ts < first {
		f.windows[w] = ts
	}
}

func (f *keyBatchFn) FinishBundle(emit func(beam.EventTime, int, model.EventBatch), window func(beam.EventTime, int64, int64)) {
	f.pending.flush(func(k batchKey, ts beam.EventTime, events []model.Event) {
		emit(ts, k.shard, model.EventBatch{Events: events})
	})
	for _, start := range slices.Sorted(maps.Keys(f.windows)) {
		ts := f.windows[start]
		window(ts, start, int64(ts))
	}
	f.windows = nil
}

// groups is a bundle's values by key, in the order the keys came, each
// stamped with the earliest timestamp it was added at.
type groups[K comparable, V any] struct {
	byKey map[K]*group[V]
	order []K
}

type group[V any] struct {
	ts beam.EventTime
	v  V
}

// reset empties g; the map is made again by the first at.
func (g *groups[K, V]) reset() {
	g.byKey = nil
	g.order = g.order[:0]
}

// at returns k's value, its timestamp lowered to ts.
func (g *groups[K, V]) at(k K, ts beam.EventTime) *V {
	e, ok := g.byKey[k]
	if !ok {
		if g.byKey == nil {
			g.byKey = map[K]*group[V]{}
		}
		e = &group[V]{ts: ts}
		g.byKey[k] = e
		g.order = append(g.order, k)
	}
	e.ts = min(e.ts, ts)
	return &e.v
}

// flush emits the groups in order and empties g.
func (g *groups[K, V]) flush(emit func(K, beam.EventTime, V)) {
	for _, k := range g.order {
		emit(k, g.byKey[k].ts, g.byKey[k].v)
	}
	g.reset()
}
