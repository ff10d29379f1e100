package pubsub_test

import (
	"fmt"
	"log"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sources/pubsub"
)

func ExampleParseSource() {
	project, sub, err := pubsub.ParseSource("pubsub:projects/shop-prod/subscriptions/purchases-revenue")
	fmt.Println(project, sub, err)
	_, _, err = pubsub.ParseSource("pubsub:projects/shop-prod/topics/purchases")
	fmt.Println(err)
	// Output:
	// shop-prod purchases-revenue <nil>
	// --source=pubsub:projects/shop-prod/topics/purchases: want pubsub:projects/PROJECT/subscriptions/SUBSCRIPTION
}

// The streaming job over a subscription: every payload is archived under
// ./pubsub-log/purchases-revenue/pubsub/ before it is acknowledged, and a
// restart replays that archive first.
func ExampleRead() {
	const source = "pubsub:projects/shop-prod/subscriptions/purchases-revenue"
	o := pipeline.Defaults()
	opts := pubsub.Options{Watermark: o.Watermark, Event: o.Event}
	if err := pubsub.Validate(source, opts); err != nil {
		log.Fatal(err) // one line, naming the flag
	}
	p, s := beam.NewPipelineWithRoot()
	records := pubsub.Read(s, source, opts)
	if _, err := pipeline.Build(s, records, o); err != nil {
		log.Fatal(err)
	}
	_ = p // attach sinks, then run with beam.Run; stop with opts.Stop.Request and a cancel
}
