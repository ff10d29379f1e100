package pubsub

import (
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/revenue-stream/hourly/testing/runnertest"
)

func wantKeys(shards int) []any {
	var want []any
	for shard := range shards {
		want = append(want, readerKey{Subscription: testSub, Shard: shard})
	}
	return want
}

// The expansion yields one element per reader key, each once, on prism:
// the elements a runner can spread over its workers.
func TestOneElementPerReaderKey(t *testing.T) {
	for _, c := range []struct{ shards, want int }{{0, 1}, {1, 1}, {4, 4}} {
		p, s := beam.NewPipelineWithRoot()
		keys := readerKeys(s, testSub, c.shards, "")
		passert.Equals(s, keys, wantKeys(c.want)...)
		passert.Count(s, keys, "reader keys", c.want)
		if _, err := runnertest.Run(p); err != nil {
			t.Fatalf("%d shards: %v", c.shards, err)
		}
	}
}

// The reading SDF's input is the per-key collection, reshuffled after the
// expansion, and not the subscription: Read's graph, followed back from
// the SDF.
func TestReadReadsOneElementPerKey(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	o := pipelineOptions()
	Read(s, "pubsub:"+testSub, Options{Shards: 3, ArchiveDir: t.TempDir(), Watermark: o.Watermark, Event: o.Event})
	edges, _, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	producer := map[*graph.Node]*graph.MultiEdge{}
	var sdfs []*graph.MultiEdge
	for _, e := range edges {
		for _, o := range e.Output {
			producer[o.To] = e
		}
		if e.DoFn != nil {
			if _, ok := e.DoFn.Recv.(*readFn); ok {
				sdfs = append(sdfs, e)
			}
		}
	}
	if len(sdfs) != 1 || len(sdfs[0].Input) != 1 {
		t.Fatalf("%d reading steps, want 1 with one input", len(sdfs))
	}
	in := sdfs[0].Input[0].From
	if got := in.Type().Type().String(); got != "pubsub.readerKey" {
		t.Errorf("the reading step's elements are %s, want pubsub.readerKey", got)
	}
	shuffle := producer[in]
	if shuffle == nil || shuffle.Op != graph.Reshuffle {
		t.Fatalf("the reading step's input comes from %v, want a Reshuffle", shuffle)
	}
	expand := producer[shuffle.Input[0].From]
	kf, ok := expand.DoFn.Recv.(*keysFn)
	if expand.Op != graph.ParDo || !ok {
		t.Fatalf("the Reshuffle's input comes from %v, want the key expansion", expand)
	}
	if kf.Shards != 3 || kf.Subscription != testSub {
		t.Errorf("the expansion makes %d keys of %q, want 3 of %q", kf.Shards, kf.Subscription, testSub)
	}
	if imp := producer[expand.Input[0].From]; imp.Op != graph.Impulse {
		t.Errorf("the expansion reads %v, want the Impulse", imp)
	}
	// The restriction of each element is its own key's.
	f := &readFn{}
	for _, k := range wantKeys(3) {
		if rest := f.CreateInitialRestriction(k.(readerKey)); rest.Shard != k.(readerKey).Shard {
			t.Errorf("key %v starts restriction %v", k, rest)
		}
	}
}

func TestReaderKeyCoder(t *testing.T) {
	for _, k := range []readerKey{{testSub, 0}, {testSub, 17}, {"", 0}} {
		got, err := decodeReaderKey(encodeReaderKey(k))
		if err != nil || got != k {
			t.Errorf("round trip of %v: %v, %v", k, got, err)
		}
	}
	if b := encodeReaderKey(readerKey{testSub, 1}); !slices.Equal(b, encodeReaderKey(readerKey{testSub, 1})) {
		t.Error("encoding is not deterministic")
	}
	if _, err := decodeReaderKey(append(encodeReaderKey(readerKey{testSub, 1}), 0)); err == nil {
		t.Error("trailing bytes accepted")
	}
}
