package bqtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// hammer makes the calls the product makes at once from several workers:
// query jobs (the sink's probes and DML) beside CreateWriteStream calls (its
// appends), some of which their caller abandons, for rounds rounds on each
// of workers goroutines per kind. It reports whether the emulator process
// died.
func hammer(t *testing.T, s *Server, workers, rounds int, dataset string) (died bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bq, err := bigquery.NewClient(ctx, Project, option.WithEndpoint("http://"+s.Host), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer bq.Close()
	w, err := managedwriter.NewClient(ctx, Project, option.WithEndpoint(s.GRPCHost), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ds := bq.Dataset(dataset)
	if err := ds.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := ds.Table("t").Create(ctx, &bigquery.TableMetadata{Schema: bigquery.Schema{{Name: "x", Type: bigquery.IntegerFieldType}}}); err != nil {
		t.Fatal(err)
	}
	parent := managedwriter.TableParentFromParts(Project, dataset, "t")
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds && ctx.Err() == nil; r++ {
				sql := fmt.Sprintf("SELECT COUNT(*) + %d FROM `%s.%s.t`", r, Project, dataset)
				if r%2 == 1 {
					sql = fmt.Sprintf("DELETE FROM `%s.%s.t` WHERE x = %d", Project, dataset, r)
				}
				_, _ = bq.Query(sql).Read(ctx)
			}
		}()
		go func() {
			defer wg.Done()
			for r := 0; r < rounds && ctx.Err() == nil; r++ {
				// A call its caller gives up on: a cancelled context
				// (a bundle that ends, a deadline) reaches the emulator's
				// metadata lookup mid-query.
				cctx, ccancel := context.WithTimeout(ctx, time.Duration(r%8)*time.Millisecond)
				_, _ = w.CreateWriteStream(cctx, &storagepb.CreateWriteStreamRequest{Parent: parent,
					WriteStream: &storagepb.WriteStream{Type: storagepb.WriteStream_COMMITTED}})
				ccancel()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		if ctx.Err() != nil {
			t.Errorf("the calls took over 2 minutes: the emulator is stuck")
		}
	case <-s.exited:
		cancel()
		<-done
	}
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// TestProxyKeepsTheEmulatorAlive makes, through Start's proxy, calls whose
// callers give up mid-call: the emulator must survive and answer the next
// call. Without the proxy the same load kills it on the first try
// (TestEmulatorCancelledCallBug).
func TestProxyKeepsTheEmulatorAlive(t *testing.T) {
	s := Start(t)
	for try := 1; try <= 3; try++ {
		if hammer(t, s, 8, 60, fmt.Sprint("d", try)) {
			t.Fatalf("try %d: the emulator died behind the proxy:\n%s", try, s.out.String())
		}
	}
}

// TestEmulatorCancelledCallBug is the minimal reproducer of the emulator's
// bug (see detachProxy): the load of TestProxyKeepsTheEmulatorAlive against
// the bare emulator. It runs only when asked (BQTEST_REPRODUCE=1), since it
// tests the dependency rather than this project, and reports the crash.
func TestEmulatorCancelledCallBug(t *testing.T) {
	if os.Getenv("BQTEST_REPRODUCE") == "" {
		t.Skip("reproducer of the emulator's cancelled-call bug; run with BQTEST_REPRODUCE=1")
	}
	for try := 1; try <= 10; try++ {
		s := startDirect(t)
		if hammer(t, s, 8, 60, "d") {
			out := s.out.String()
			if len(out) > 2000 {
				out = out[:2000]
			}
			t.Logf("try %d: the bare emulator died under concurrent calls (the bug reproduced):\n%s", try, out)
			return
		}
		t.Logf("try %d: the bare emulator survived", try)
	}
	t.Errorf("the bare emulator survived 10 tries: has the emulator fixed its cancelled-call bug? then the proxy can go")
}
