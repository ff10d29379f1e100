package bqtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"cloud.google.com/go/bigquery/storage/managedwriter"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// load is what hammer does beside its queries and CreateWriteStream calls.
type load int

const (
	// abandoning: some CreateWriteStream calls are given up mid-call (a
	// deadline, a bundle that ends), the emulator's first bug.
	abandoning load = iota
	// creating: datasets are created at the same time, as a test or a sink
	// does at its start, and no call is given up: the emulator's second
	// trigger (its project lookup reads a table another call is writing).
	creating
)

// hammer makes the calls the product makes at once from several workers:
// query jobs (the sink's probes and DML) beside CreateWriteStream calls (its
// appends), with what kind adds, for rounds rounds on each of workers
// goroutines per kind of call. It reports whether the emulator process died.
func hammer(t *testing.T, s *Server, workers, rounds int, dataset string, kind load) (died bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var answered atomic.Int64 // calls the emulator answered, however
	stuck := watchProgress(ctx, cancel, &answered, quietLimit)
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
		if kind == creating {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A tenth as many: the emulator reads all of a project's
				// datasets for each call, so more would only slow it.
				for r := 0; r < rounds/10 && ctx.Err() == nil; r++ {
					_ = bq.Dataset(fmt.Sprintf("%s_%d_%d", dataset, i, r)).Create(ctx, nil)
					answered.Add(1)
				}
			}()
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds && ctx.Err() == nil; r++ {
				sql := fmt.Sprintf("SELECT COUNT(*) + %d FROM `%s.%s.t`", r, Project, dataset)
				if r%2 == 1 {
					sql = fmt.Sprintf("DELETE FROM `%s.%s.t` WHERE x = %d", Project, dataset, r)
				}
				_, _ = bq.Query(sql).Read(ctx)
				answered.Add(1)
			}
		}()
		go func() {
			defer wg.Done()
			for r := 0; r < rounds && ctx.Err() == nil; r++ {
				cctx, ccancel := context.WithCancel(ctx)
				if kind == abandoning {
					// A call its caller gives up on: a cancelled context
					// reaches the emulator's metadata lookup mid-query.
					cctx, ccancel = context.WithTimeout(ctx, time.Duration(r%8)*time.Millisecond)
				}
				_, _ = w.CreateWriteStream(cctx, &storagepb.CreateWriteStreamRequest{Parent: parent,
					WriteStream: &storagepb.WriteStream{Type: storagepb.WriteStream_COMMITTED}})
				ccancel()
				answered.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		if stuck() {
			t.Errorf("no call was answered for %v: the emulator is stuck", quietLimit)
		}
	case <-s.exited:
		cancel()
		<-done
	}
	t.Logf("load %d: %d calls answered in %v", kind, answered.Load(), time.Since(start).Round(time.Second))
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// quietLimit is how long hammer waits for any call to be answered before it
// calls the emulator stuck. A slow emulator is not a stuck one: the creating
// load takes about 90 s alone and over 2 minutes on a loaded machine (beside
// app/launch in CI, or two CPU hogs), answering every call.
const quietLimit = time.Minute

// watchProgress cancels ctx once count has not moved for quiet, and returns
// a func that reports whether it did.
func watchProgress(ctx context.Context, cancel context.CancelFunc, count *atomic.Int64, quiet time.Duration) (stuck func() bool) {
	var stalled atomic.Bool
	go func() {
		tick := time.NewTicker(quiet / 10)
		defer tick.Stop()
		last, since := count.Load(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if n := count.Load(); n != last {
				last, since = n, time.Now()
			} else if time.Since(since) >= quiet {
				stalled.Store(true)
				cancel()
				return
			}
		}
	}()
	return stalled.Load
}

// rounds is how many calls of each kind a worker of hammer makes under a
// load: the creating load slows the emulator down as datasets pile up (it
// reads all of a project's datasets for each call), so it makes fewer.
var rounds = map[load]int{abandoning: 60, creating: 60}

// TestProxyKeepsTheEmulatorAlive puts, through Start's proxy, the loads
// that kill the bare emulator (TestEmulatorCancelledCallBug,
// TestEmulatorConcurrentCallBug), each on a fresh emulator: it must survive
// them. The abandoning load kills the bare emulator at the first try; the
// creating load one try in two to four, and a try of it takes a minute and
// a half or more behind the proxy, so it runs once.
func TestProxyKeepsTheEmulatorAlive(t *testing.T) {
	for try, kind := range []load{abandoning, abandoning, abandoning, creating} {
		s := Start(t)
		if hammer(t, s, 8, 60, "d", kind) {
			t.Fatalf("try %d (load %d): the emulator died behind the proxy:\n%s", try+1, kind, s.out.String())
		}
	}
}

// reproduce runs a load against the bare emulator until it dies, up to ten
// times. It runs only when asked (BQTEST_REPRODUCE=1), since it tests the
// dependency rather than this project.
func reproduce(t *testing.T, kind load, bug string) {
	if os.Getenv("BQTEST_REPRODUCE") == "" {
		t.Skipf("reproducer of the emulator's %s bug; run with BQTEST_REPRODUCE=1", bug)
	}
	for try := 1; try <= 10; try++ {
		s := startDirect(t)
		if hammer(t, s, 8, 60, "d", kind) {
			out := s.out.String()
			if i := strings.Index(out, "panic:"); i >= 0 {
				out = out[i:] // the panic, not the errors logged before it
			}
			t.Logf("try %d: the bare emulator died (the %s bug reproduced):\n%.2000s", try, bug, out)
			return
		}
		t.Logf("try %d: the bare emulator survived", try)
	}
	t.Errorf("the bare emulator survived 10 tries: has the emulator fixed its %s bug? then the proxy's part for it can go", bug)
}

// TestEmulatorCancelledCallBug is the minimal reproducer of the emulator's
// first bug (detachProxy): CreateWriteStream calls given up mid-call.
func TestEmulatorCancelledCallBug(t *testing.T) { reproduce(t, abandoning, "cancelled-call") }

// TestEmulatorConcurrentCallBug is the minimal reproducer of its second
// (detachProxy's alone): CreateWriteStream calls while datasets are
// created, none given up. Detaching alone cannot help here, so this is also
// what the proxy would meet without alone.
func TestEmulatorConcurrentCallBug(t *testing.T) { reproduce(t, creating, "concurrent-call") }
