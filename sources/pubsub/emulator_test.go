package pubsub

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

const (
	testProject = "test-proj"
	testTopic   = "projects/test-proj/topics/events"
	testSub     = "projects/test-proj/subscriptions/revenue"
)

// emulator is an in-process Pub/Sub server (pstest) on a loopback port, with
// PUBSUB_EMULATOR_HOST pointing at it for the test, and a topic and a
// subscription.
type emulator struct {
	srv    *pstest.Server
	client *gpubsub.Client
	// lost is the set of message ids whose next acknowledgement the server
	// swallows (answers OK, does not apply): a lost ack, after which Pub/Sub
	// delivers the message again once its ack deadline expires.
	lost *lostAcks
}

type lostAcks struct {
	mu  sync.Mutex
	ids map[string]int
	// swallowed counts acknowledgements dropped per message id.
	swallowed map[string]int
}

// React implements pstest.Reactor for Acknowledge.
func (l *lostAcks) React(req any) (bool, any, error) {
	ack, ok := req.(*pb.AcknowledgeRequest)
	if !ok {
		return false, nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var keep []string
	for _, id := range ack.AckIds {
		msg, _, _ := strings.Cut(id, ":") // pstest ack ids are "<message id>:<delivery>"
		if l.ids[msg] > 0 {
			l.ids[msg]--
			l.swallowed[msg]++
			continue
		}
		keep = append(keep, id)
	}
	// Let the default handler ack the rest; a reactor cannot pass on a
	// modified request, so rewrite it in place.
	ack.AckIds = keep
	return false, nil, nil
}

func (l *lostAcks) lose(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids[id]++
}

func newEmulator(t *testing.T, ackDeadline time.Duration, reactors ...pstest.ServerReactorOption) *emulator {
	t.Helper()
	lost := &lostAcks{ids: map[string]int{}, swallowed: map[string]int{}}
	srv := pstest.NewServer(append(reactors, pstest.ServerReactorOption{FuncName: "Acknowledge", Reactor: lost})...)
	t.Cleanup(func() { srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	ctx := context.Background()
	client, err := gpubsub.NewClient(ctx, testProject)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: testTopic}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name: testSub, Topic: testTopic, AckDeadlineSeconds: int32(ackDeadline / time.Second),
	}); err != nil {
		t.Fatal(err)
	}
	return &emulator{srv: srv, client: client, lost: lost}
}

// publish publishes payloads and returns their message ids.
func (e *emulator) publish(payloads ...string) []string {
	var ids []string
	for _, p := range payloads {
		ids = append(ids, e.srv.Publish(testTopic, []byte(p), nil))
	}
	return ids
}

// message returns the server's view of a message (deliveries, acks).
func (e *emulator) message(id string) *pstest.Message {
	for _, m := range e.srv.Messages() {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// acked returns the ids of every message the server holds as acknowledged.
func (e *emulator) acked() map[string][]byte {
	out := map[string][]byte{}
	for _, m := range e.srv.Messages() {
		if m.Acks > 0 {
			out[m.ID] = m.Data
		}
	}
	return out
}

// archived reads the archive: every line and sidecar id, in arrival order.
func archived(t *testing.T, dir string) (lines []string, ids []string) {
	t.Helper()
	files, err := rawlog.ListFiles(dir, Partition)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, Partition, f))
		if err != nil {
			t.Fatal(err)
		}
		side, err := os.ReadFile(filepath.Join(dir, Partition, rawlog.SidecarName(f)))
		if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimSuffix(string(data), "\n"); s != "" {
			lines = append(lines, strings.Split(s, "\n")...)
		}
		if s := strings.TrimSuffix(string(side), "\n"); s != "" {
			for _, l := range strings.Split(s, "\n") {
				id, _, _ := strings.Cut(l, "\t")
				ids = append(ids, id)
			}
		}
	}
	return lines, ids
}

// assertAckedArchived checks the recovery invariant: every message the
// server holds as acknowledged is in the archive, with its id.
func assertAckedArchived(t *testing.T, e *emulator, dir string) {
	t.Helper()
	lines, ids := archived(t, dir)
	have := map[string]string{}
	for i, id := range ids {
		if i < len(lines) {
			have[id] = lines[i]
		}
	}
	for id, data := range e.acked() {
		if rawlog.Blank(archiveLine(data)) {
			continue // blank payloads are acknowledged without a line
		}
		line, ok := have[id]
		if !ok {
			t.Errorf("message %s was acknowledged but is not in the archive", id)
			continue
		}
		if line != string(archiveLine(data)) {
			t.Errorf("message %s: archive line %q, payload %q", id, line, data)
		}
	}
}
