package launch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

const (
	testProject = "test-proj"
	testTopic   = "projects/test-proj/topics/events"
	testSub     = "projects/test-proj/subscriptions/revenue"
)

// startEmulator starts an in-process Pub/Sub server (pstest) with a topic and
// a subscription, and points PUBSUB_EMULATOR_HOST at it for the test (the
// reader runs in this process: prism's loopback harness).
func startEmulator(t *testing.T) *pstest.Server {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	ctx := context.Background()
	client, err := gpubsub.NewClient(ctx, testProject)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: testTopic}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name: testSub, Topic: testTopic, AckDeadlineSeconds: 10,
	}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// acked reports whether the server holds message id as acknowledged: the
// reader archived it and stamped it (acknowledgement comes after both).
func acked(srv *pstest.Server, id string) bool {
	for _, m := range srv.Messages() {
		if m.ID == id {
			return m.Acks > 0
		}
	}
	return false
}

// TestPubSubSource runs the launcher on a Pub/Sub subscription (pstest):
// SPEC §7's minimal sequence, plus an event days ahead that closes the next
// day's windows too, gives FINAL 170 with 3 events for [10:00, 11:00); a
// graceful stop then ends the run with its summary, conserved figures and
// every message in the archive.
func TestPubSubSource(t *testing.T) {
	srv := startEmulator(t)
	archive := filepath.Join(t.TempDir(), "archive")
	o := options(t, "pubsub:"+testSub)
	o.PubSub.ArchiveDir = archive
	o.Report = filepath.Join(t.TempDir(), "run.html") // traces the archive
	// The events are weeks old by the wall clock: an idle subscription
	// would move its watermark to now - bound and close every window at
	// once. An hour of processing time is far longer than the test.
	o.Pipeline.Watermark.IdleTimeout = time.Hour
	// EARLY firings stay on (a Pub/Sub source is streaming), with a short
	// period: with the default 1m the ON_TIME and FINAL rows wait for the
	// next early tick (as TestCommandSIGINT notes).
	o.Pipeline.Triggers.Early = time.Second
	o.PubSub.PollInterval = 50 * time.Millisecond
	o.PubSub.PullTimeout = 300 * time.Millisecond
	o.QuietPeriod = 500 * time.Millisecond
	o.StopTimeout = 20 * time.Second // a loaded machine settles slowly
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}

	job := runInBackground(t, o)

	// pstest delivers the unacknowledged messages of a subscription in no
	// particular order, so each message is published only once the one
	// before it is acknowledged: arrival order is SPEC §7's order.
	deadline := time.Now().Add(60 * time.Second)
	messages := append(slices.Clone(minimalLog), purchase("Z", "2026-11-10T00:00:00Z", "u7", "3"))
	var ids []string
	for i, m := range messages {
		id := srv.Publish(testTopic, []byte(m), nil)
		ids = append(ids, id)
		for !acked(srv, id) {
			if job.ended() || time.Now().After(deadline) {
				job.fail(t, fmt.Sprintf("message %d (%s) not acknowledged", i+1, m))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	ws := ms("2026-11-04T10:00:00Z")
	final := func(r model.Row) bool {
		return r.WindowStart == ws && r.State == model.Final && r.RevenueMicros == 170_000_000 && r.EventCount == 3
	}
	for found := false; !found; {
		if db, err := sqlite.Open(context.Background(), o.Sink.Path); err == nil {
			rows, err := sinktest.ChangelogRows(context.Background(), db)
			db.Close()
			found = err == nil && slices.ContainsFunc(rows, final)
		}
		if !found {
			if job.ended() || time.Now().After(deadline) {
				job.fail(t, fmt.Sprintf("no FINAL 170 (3 events) row for [10:00, 11:00) in %s", o.Sink.Path))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	sum, _ := job.stopAndWait(t, 60*time.Second) // what SIGINT does
	if sum.State != StateCancelled || !sum.Interrupted || !sum.Follow || sum.Archive != archive {
		t.Errorf("state %s, interrupted %v, follow %v, archive %q; want CANCELLED, interrupted, streaming, %q",
			sum.State, sum.Interrupted, sum.Follow, sum.Archive, archive)
	}
	if got := sum.Settings["early"]; got != "1s" {
		t.Errorf("early = %s: a Pub/Sub source is streaming and keeps its EARLY firings", got)
	}
	// A, B, X, C, Y, Z counted; the copy of A a duplicate; A=120 a conflict;
	// D too late.
	wantCounts(t, sum, 9, 6, 1, 1, 0, 1)
	if out := job.out.String(); !strings.Contains(out, "stream of pubsub:"+testSub) || !strings.Contains(out, ": holds") {
		t.Errorf("summary:\n%s", out)
	}

	if html, err := os.ReadFile(o.Report); err != nil || !bytes.Contains(html, []byte("partition pubsub</h3>")) {
		t.Errorf("HTML report: %v (%d bytes, want the archive's partition \"pubsub\" traced)", err, len(html))
	}

	// Every message acknowledged is in the archive, the recovery log.
	files, err := os.ReadDir(filepath.Join(archive, "pubsub"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range files {
		if strings.HasPrefix(f.Name(), ".") || !strings.HasSuffix(f.Name(), ".jsonl") {
			continue // the message-id sidecars
		}
		data, err := os.ReadFile(filepath.Join(archive, "pubsub", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
	}
	if !slices.Equal(lines, messages) {
		t.Errorf("archive lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(messages, "\n"))
	}

	// Reconcile reads the archive as the raw log. The stream's audit rows
	// name messages ("pubsub:<id>"), the archive names lines; the id
	// sidecars join them, so D is recognised as the event the stream judged
	// too late: one too_late difference of 7.00 for [10:00, 11:00).
	ro := reconcile.Defaults()
	ro.Source, ro.Sink, ro.RunID = archive, o.Sink, "pubsub1"
	res, err := reconcile.Run(context.Background(), ro)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diffs) != 1 || res.Diffs[0].WindowStart != ws || res.Diffs[0].Classification != reconcile.ClassTooLate ||
		res.Diffs[0].Recomputed.RevenueMicros != 177_000_000 {
		t.Errorf("reconcile of the archive: diffs %+v (class %q); want one too_late diff for 10:00, recomputed 177.000000", res.Diffs, res.Diffs[0].Classification)
	}
}
