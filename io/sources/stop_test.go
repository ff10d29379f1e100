package sources

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStopSignalNaming: each run's stop object is named for its own token,
// inside the control folder, and two runs never share a token.
func TestStopSignalNaming(t *testing.T) {
	a, b := NewStopSignal("gs://bucket/raw/_control"), NewStopSignal("gs://bucket/raw/_control")
	if a.Token == b.Token {
		t.Fatalf("two runs drew the same token %q", a.Token)
	}
	if !strings.HasPrefix(a.Path(), "gs://bucket/raw/_control/stop-") || !strings.HasSuffix(a.Path(), a.Token) {
		t.Errorf("stop object %q: want gs://bucket/raw/_control/stop-<token>", a.Path())
	}
	if err := a.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for _, bad := range []StopSignal{{Dir: "hdfs://x/c", Token: "t"}, {Dir: "c", Token: "../t"}, {Dir: "c", Token: "a*b"}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) accepted it", bad)
		}
	}
	var none StopSignal
	if none.Enabled() || none.Watch(time.Second).Stopped() {
		t.Error("the zero signal stops readers")
	}
	if none.Request(context.Background()) == nil {
		t.Error("the zero signal accepted a stop request")
	}
}

// TestStopSignalStaleness: a stop object left by an earlier run (or
// written for another) never stops this run's readers; this run's stops
// them on the first look a poll interval after the last one, and the answer
// is kept.
func TestStopSignalStaleness(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "_control")
	old, run := NewStopSignal(dir), NewStopSignal(dir)
	if err := run.Prepare(); err != nil {
		t.Fatal(err)
	}
	if err := old.Request(ctx); err != nil { // an earlier run's, never cleared
		t.Fatal(err)
	}

	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w := run.Watch(time.Second)
	w.now = func() time.Time { return clock }
	if w.Stopped() {
		t.Fatal("an earlier run's stop object stopped this run")
	}
	if err := run.Request(ctx); err != nil {
		t.Fatal(err)
	}
	// The negative answer holds for a poll interval: one look per poll.
	clock = clock.Add(999 * time.Millisecond)
	if w.Stopped() {
		t.Fatal("looked again within the poll interval")
	}
	clock = clock.Add(time.Millisecond)
	if !w.Stopped() {
		t.Fatal("this run's stop object not seen a poll interval after the last look")
	}
	// Seen once, kept: the object may go (Clear) without restarting the
	// readers.
	if err := run.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(time.Hour)
	if !w.Stopped() {
		t.Fatal("the positive answer was not kept")
	}
	if ok, err := run.Requested(ctx); ok || err != nil {
		t.Errorf("after Clear: requested %v, %v; want false, nil", ok, err)
	}
	// Clear leaves the other run's object, and so the folder.
	if ok, err := old.Requested(ctx); !ok || err != nil {
		t.Errorf("Clear removed another run's object: %v, %v", ok, err)
	}
	if err := old.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the empty local control folder stays: %v", err)
	}
}

// TestStopSignalMemfs: the object is written and seen through Beam's
// filesystem, as on gs://.
func TestStopSignalMemfs(t *testing.T) {
	s := NewStopSignal("memfs://stop-test/_control")
	w := s.Watch(0)
	if w.Stopped() {
		t.Fatal("stopped before the request")
	}
	if err := s.Request(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !w.Stopped() {
		t.Fatal("request not seen")
	}
}
