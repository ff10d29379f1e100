package transforms

import "github.com/apache/beam/sdks/v2/go/pkg/beam"

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
