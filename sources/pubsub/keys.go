package pubsub

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/coders"
)

func init() {
	coders.Register(encodeReaderKey, decodeReaderKey)
	register.DoFn2x0[[]byte, func(readerKey)](&keysFn{})
	register.Emitter1[readerKey]()
}

// readerKey is one reader key: an element of its own, since a runner places
// an SDF's work by its element (see the package doc).
type readerKey struct {
	Subscription string // projects/P/subscriptions/S
	Shard        int
}

func (k readerKey) String() string { return fmt.Sprintf("%s#%d", k.Subscription, k.Shard) }

// keysFn expands the Impulse into one element per reader key.
type keysFn struct {
	Subscription string
	Shards       int
}

func (f *keysFn) ProcessElement(_ []byte, emit func(readerKey)) {
	for shard := range max(f.Shards, 1) {
		emit(readerKey{Subscription: f.Subscription, Shard: shard})
	}
}

// readerKeys is one element per reader key, reshuffled so a runner that
// fused them with the Impulse spreads them over its workers.
func readerKeys(s beam.Scope, subscription string, shards int) beam.PCollection {
	keys := beam.ParDo(s, &keysFn{Subscription: subscription, Shards: shards}, beam.Impulse(s))
	return beam.Reshuffle(s, keys)
}

// The key's coder is deterministic: the runner hashes its bytes.
func encodeReaderKey(k readerKey) []byte {
	w := coders.Writer{B: make([]byte, 0, len(k.Subscription)+8)}
	w.String(k.Subscription)
	w.Varint(int64(k.Shard))
	return w.B
}

func decodeReaderKey(b []byte) (readerKey, error) {
	rd := coders.Reader{B: b}
	k := readerKey{Subscription: rd.String(), Shard: int(rd.Varint())}
	return coders.Done(k, &rd, "pubsub reader key")
}
