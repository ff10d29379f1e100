// Command pstestserver serves a Pub/Sub emulator (pstest) on a TCP port in
// its own process, with one topic and one subscription, so that tests can
// run the launcher as a child process against it, kill the launcher and
// restart it while the subscription (its unacknowledged messages) lives on.
//
//	pstestserver --port=0 --topic=projects/P/topics/T --subscription=projects/P/subscriptions/S
//
// It prints "ADDR host:port" on stdout once it serves, and runs until killed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
)

func main() {
	port := flag.Int("port", 0, "TCP port (0: any free one)")
	topic := flag.String("topic", "projects/test-proj/topics/events", "topic to create")
	sub := flag.String("subscription", "projects/test-proj/subscriptions/revenue", "subscription to create")
	deadline := flag.Duration("ack-deadline", 10*time.Second, "the subscription's ack deadline")
	flag.Parse()
	// Lets a test use ack deadlines below pstest's default minimum of 10s.
	pstest.SetMinAckDeadline(time.Second)
	srv := pstest.NewServerWithPort(*port)
	ctx := context.Background()
	if _, err := srv.GServer.CreateTopic(ctx, &pb.Topic{Name: *topic}); err != nil {
		fmt.Fprintln(os.Stderr, "pstestserver:", err)
		os.Exit(1)
	}
	if _, err := srv.GServer.CreateSubscription(ctx, &pb.Subscription{
		Name: *sub, Topic: *topic, AckDeadlineSeconds: int32(*deadline / time.Second),
	}); err != nil {
		fmt.Fprintln(os.Stderr, "pstestserver:", err)
		os.Exit(1)
	}
	fmt.Printf("ADDR %s\n", srv.Addr)
	select {}
}
