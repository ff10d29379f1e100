// Package dryruntest checks what a --dry-run writes: the service addresses
// it must not contact (Tripwire) and the pipeline proto it must produce
// (DryRunProto).
package dryruntest

import (
	"net"
	"os"
	"sync/atomic"
	"testing"

	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/revenue-stream/hourly/internal/capability"
)

// Tripwire is a listener that counts the connections made to it: a test of
// a dry run points every service address (job server, Pub/Sub, GCS,
// BigQuery) at it and expects none.
func Tripwire(t testing.TB) (addr string, dialed *atomic.Int64) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	dialed = new(atomic.Int64)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), dialed
}

// DryRunProto reads the pipeline proto a --dry-run wrote to path, fails
// the test unless it passes runner's capability check, and returns what
// the pipeline uses (capability.Uses).
func DryRunProto(t testing.TB, path, runner string) map[capability.Feature][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p pipepb.Pipeline
	if err := protojson.Unmarshal(b, &p); err != nil {
		t.Fatalf("--dry-run wrote no pipeline proto: %v", err)
	}
	if err := capability.Check(&p, capability.For(runner)); err != nil {
		t.Errorf("the proto fails its own runner's check: %v", err)
	}
	uses, err := capability.Uses(&p)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.GetComponents().GetTransforms()) == 0 {
		t.Error("the proto holds no transforms")
	}
	return uses
}
