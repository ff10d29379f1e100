package transforms

import (
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

// DedupShardSim runs one dedup shard's state logic outside a runner, with the
// dedup DoFn's own functions and a bag kept as the runner would: cmd/scale
// measures a shard's size, growth and reload time with it.
type DedupShardSim struct {
	p           triggers.Policy
	retentionMs int64
	st          *shardState
	bag         [][]byte
	bagBytes    int64
	// Shard sets the compaction slot.
	Shard int
	DedupShardStats
}

// DedupShardStats is what a DedupShardSim wrote: Compactions counts bag rewrites, CompactedBytes
// what they wrote, AppendedBytes what batches appended; MaxValue is the largest element.
type DedupShardStats struct {
	Compactions                   int
	CompactedBytes, AppendedBytes int64
	MaxValue                      int
}

// NewDedupShardSim starts an empty shard.
func NewDedupShardSim(p triggers.Policy, retentionMs int64) *DedupShardSim {
	return &DedupShardSim{p: p, retentionMs: retentionMs, st: newShardState(model.NoWatermark)}
}

// Batch judges a batch as ProcessElement does, appends its blobs to the bag
// and returns how many events it counted.
func (s *DedupShardSim) Batch(events []model.Event) int {
	var added idBlobs
	counted := 0
	for i := range events {
		if v := s.st.Judge(&events[i], s.p); v.Verdict == event.Counted {
			added.add(v.window, v.id, events[i].Fingerprint)
			counted++
		}
	}
	if b := added.blob(); b != nil {
		s.bag = append(s.bag, b)
		s.bagBytes += int64(len(b))
		s.AppendedBytes += int64(len(b))
		s.MaxValue = max(s.MaxValue, len(b))
	}
	s.st.stored += added.n
	return counted
}

// Advance moves the shard to watermark w as dedupFn.advance does.
func (s *DedupShardSim) Advance(w int64) {
	if _, compact := s.st.advance(s.Shard, w, s.retentionMs, s.p); !compact {
		return
	}
	s.bag = s.st.compact(s.p)
	s.bagBytes = 0
	for _, b := range s.bag {
		s.bagBytes += int64(len(b))
		s.MaxValue = max(s.MaxValue, len(b))
	}
	s.Compactions++
	s.CompactedBytes += s.bagBytes
}

// Live returns the ids remembered.
func (s *DedupShardSim) Live() int { return s.st.ids.n }

// StateBytes returns the bag's size: the key's state in the runner.
func (s *DedupShardSim) StateBytes() int64 { return s.bagBytes }

// CacheBytes returns the decoded shard's memory, as the process cache
// accounts it.
func (s *DedupShardSim) CacheBytes() int64 { return shardBytes(s.st) }

// Reload decodes the bag into a fresh state (a cache miss) and returns how
// many ids it remembered.
func (s *DedupShardSim) Reload() (int, error) {
	st := newShardState(s.st.known)
	err := st.loadIDs(s.bag, s.p, s.retentionMs)
	return st.ids.n, err
}

// Snapshot returns the bag and watermark as they are now, for a later
// Reload (the blobs are never modified, only replaced).
func (s *DedupShardSim) Snapshot() *DedupShardSim {
	c := NewDedupShardSim(s.p, s.retentionMs)
	c.st.known = s.st.known
	c.bag = s.bag[:len(s.bag):len(s.bag)]
	c.bagBytes = s.bagBytes
	return c
}
