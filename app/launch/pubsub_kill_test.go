package launch

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	"github.com/revenue-stream/hourly/internal/faults"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
	"github.com/revenue-stream/hourly/testing/oracle"
	"github.com/revenue-stream/hourly/testing/pubsubtest"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// pstestBinary builds the pstest server once per test run, next to the
// launch binaries (binDir, removed by TestMain).
var pstestBinary = sync.OnceValues(func() (string, error) {
	return buildCommand("pstestserver", "github.com/revenue-stream/hourly/testing/pstestserver")
})

// buildBinaries returns the binaries the child-process tests run: the
// launcher with the faults build tag (the kill tests arm its Pub/Sub fault
// points; a production build ignores them) and the pstest server.
func buildBinaries(t testing.TB) (launch, pstest string) {
	t.Helper()
	return buildFaultBinary(t), mustBuild(t, pstestBinary)
}

// startPstestProcess runs the pstest server in its own process and returns
// its address; it is killed when the test ends.
func startPstestProcess(t testing.TB, bin string) string {
	t.Helper()
	return pubsubtest.StartServer(t, bin, testTopic, testSub, 10*time.Second)
}

// publishLog publishes payloads with the real client, in groups with a
// pause between them, so that the reader pulls several batches. It returns
// each message's payload by the id the server gave it.
func publishLog(t *testing.T, addr string, groups [][]string) map[string]string {
	t.Helper()
	t.Setenv("PUBSUB_EMULATOR_HOST", addr)
	ctx := context.Background()
	c, err := gpubsub.NewClient(ctx, testProject)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pub := c.Publisher(testTopic)
	defer pub.Stop()
	byID := map[string]string{}
	for _, g := range groups {
		var res []*gpubsub.PublishResult
		for _, m := range g {
			res = append(res, pub.Publish(ctx, &gpubsub.Message{Data: []byte(m)}))
		}
		for i, r := range res {
			id, err := r.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			byID[id] = g[i]
		}
		time.Sleep(300 * time.Millisecond)
	}
	return byID
}

// killLog is the test's input: n purchases over two hours, every tenth an
// identical copy of an earlier one, in groups. With audit, the last groups
// also hold a record for each audit table: conflicting copies (another
// user_id, the same amount, so that the totals do not depend on which copy
// Pub/Sub delivers first), a malformed line and an event days too late.
func killLog(n, groups int, audit bool) [][]string {
	out := make([][]string, groups)
	base := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	purchase := func(id int, user string) string {
		at := base.Add(time.Duration(id) * 7 * time.Second).Format(time.RFC3339)
		return fmt.Sprintf(`{"event_id":"e%d","event_time":%q,"user_id":%q,"amount":"%d.25"}`, id, at, user, id%50+1)
	}
	for i := range n {
		id := i
		if i%10 == 9 {
			id = i - 5 // a copy
		}
		out[i%groups] = append(out[i%groups], purchase(id, fmt.Sprint("u", id%7)))
	}
	if audit {
		for id := 0; id < n; id += n / killConflicts { // ids published as originals (none ends in 9)
			out[groups-1] = append(out[groups-1], purchase(id, "someone else"))
		}
		out[groups-2] = append(out[groups-2], `{"event_id":"broken","event_time":`)
		out[groups-1] = append(out[groups-1], `{"event_id":"old","event_time":"2026-11-01T10:00:00Z","user_id":"u1","amount":"9.99"}`)
	}
	return out
}

// killConflicts is how many conflicting copies killLog adds.
const killConflicts = 5

// child is a launcher run in its own process.
type child struct {
	cmd    *exec.Cmd
	stderr lockedBuffer
	done   chan error
}

// lockedBuffer is written by one goroutine while the test reads it: a
// child's stderr (exec's copying goroutine) or the process's log.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail is what a failure message shows of the child's stderr: its start
// lines and its last lines (the progress lines say what it was doing when
// the test gave up), the middle cut.
func (b *lockedBuffer) tail() string {
	const head, last = 8, 40
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) <= head+last {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:head], "\n") + fmt.Sprintf("\n[... %d lines ...]\n", len(lines)-head-last) + strings.Join(lines[len(lines)-last:], "\n")
}

func startChild(t testing.TB, bin, addr string, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), done: make(chan error, 1)}
	c.cmd.Env = append(append(os.Environ(), "PUBSUB_EMULATOR_HOST="+addr), env...)
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// exited reports whether the child has ended, without waiting.
func (c *child) exited() bool {
	select {
	case err := <-c.done:
		c.done <- err // for wait and the cleanup
		return true
	default:
		return false
	}
}

// wait waits for the child to end and returns its wait status. Giving up,
// it shows the tail of the child's stderr: its progress lines say what it
// was doing.
func (c *child) wait(t testing.TB, d time.Duration) syscall.WaitStatus {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err // for the cleanup
	case <-time.After(d):
		t.Fatalf("child still running after %s; stderr (tail):\n%s", d, c.stderr.tail())
	}
	return c.cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// waitArchived waits until the archive under root holds an object (each
// reader key's partition is a folder of it), or the child has ended: a
// pull's batch was then written whole, so whatever is published after it
// comes in a later pull.
func (c *child) waitArchived(t testing.TB, root string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(d)
	for !c.exited() {
		if archivedObjects(ctx, root) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing archived under %s after %s; stderr (tail):\n%s", root, d, c.stderr.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// archivedObjects counts the archive objects under root (not their
// sidecars, which are written first); 0 while root does not exist.
func archivedObjects(ctx context.Context, root string) int {
	top, err := files.List(ctx, root)
	if err != nil {
		return 0
	}
	n := 0
	for _, part := range top.Dirs {
		l, err := files.List(ctx, files.Join(root, part))
		if err != nil {
			continue
		}
		for _, name := range l.Files {
			if !strings.HasPrefix(name, ".") {
				n++
			}
		}
	}
	return n
}

// currentRowsOf reads the sink's latest row per window.
func currentRowsOf(path string) map[oracle.Key]model.Row {
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		return nil
	}
	defer db.Close()
	rows, err := sinktest.CurrentRows(context.Background(), db)
	if err != nil {
		return nil
	}
	out := map[oracle.Key]model.Row{}
	for _, r := range rows {
		out[oracle.Key{WindowStart: r.WindowStart, Dims: r.Dims}] = r
	}
	return out
}

// The launcher as a child process on a pstest server in another process,
// SIGKILLed at each of the Pub/Sub reader's commit boundaries (after pull,
// after archive, after acknowledgement, after emit), then restarted: the
// rows equal the offline oracle's totals, nothing lost, nothing counted
// twice.
func TestPubSubKillAtEveryBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the launcher as a child process")
	}
	k := newKillRun(t)
	for _, point := range []string{faults.PubSubAfterPull, faults.PubSubAfterArchive, faults.PubSubAfterAck, faults.PubSubAfterEmit} {
		t.Run(point, func(t *testing.T) {
			k.run(t, point, filepath.Join(t.TempDir(), "archive"))
		})
	}
}

// killRun is the kill-and-restart scenario: its binaries, its log in
// groups, and what the offline oracle says the rows must end as.
type killRun struct {
	launchBin, pstestBin string
	groups               [][]string
	want                 oracle.Result
	wantCounted          int64
}

func newKillRun(t *testing.T) *killRun {
	t.Helper()
	k := &killRun{groups: killLog(240, 6, true)}
	k.launchBin, k.pstestBin = buildBinaries(t)

	// The oracle: the log in one partition (order does not change any
	// total here: nothing is too late with 24h of lateness).
	logDir := t.TempDir()
	var all []string
	for _, g := range k.groups {
		all = append(all, g...)
	}
	if err := os.MkdirAll(filepath.Join(logDir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logDir, "p", "log.jsonl"), []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	if k.want, err = oracle.Replay(logDir, oracle.DefaultSettings(time.Now())); err != nil {
		t.Fatal(err)
	}
	for _, tot := range k.want.Final {
		k.wantCounted += tot.Count
	}
	return k
}

// run publishes half the log, starts the launcher archiving to archive
// with the fault armed at point (its second batch), publishes the rest,
// restarts it once the fault killed it, and checks the rows against the
// oracle after a graceful stop. It returns the sink's path.
func (k *killRun) run(t *testing.T, point, archive string) string {
	t.Helper()
	addr := startPstestProcess(t, k.pstestBin)
	db := filepath.Join(t.TempDir(), "revenue.db")
	args := []string{
		"--source=pubsub:" + testSub, "--pubsub-archive=" + archive,
		"--sink=sqlite:" + db, "--idle-timeout=1h", "--early=1s", "--pubsub-pullers=2",
	}
	published := publishLog(t, addr, k.groups[:3])

	// Run 1 dies at the second batch's boundary. The rest is published
	// only once its first batch is archived: published before the first
	// pull, it would come in that same pull, there would be no second
	// batch, and run 1 would never die (the cause of issue #23's stalls:
	// whether the rest arrived before the first pull was a race with the
	// child's start).
	c1 := startChild(t, k.launchBin, addr, []string{faults.Env + "=" + point + ":2"}, args...)
	c1.waitArchived(t, archive, 3*time.Minute)
	maps.Copy(published, publishLog(t, addr, k.groups[3:]))
	// The bounds are generous: on a loaded machine (the full test suite
	// beside other builds) prism's start alone has taken over a minute.
	ws := c1.wait(t, 3*time.Minute)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL || !strings.Contains(c1.stderr.String(), point+" fired") {
		t.Fatalf("run 1 ended with %v, want SIGKILL at %s; stderr (tail):\n%s", ws, point, c1.stderr.tail())
	}

	// Run 2 re-emits the archive, pulls the rest, and is stopped
	// gracefully once its rows hold every event.
	c2 := startChild(t, k.launchBin, addr, nil, args...)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var counted int64
		for _, r := range currentRowsOf(db) {
			counted += r.EventCount
		}
		if counted >= k.wantCounted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rows hold %d events after 3m, want %d; stderr (tail):\n%s", counted, k.wantCounted, c2.stderr.tail())
		}
		time.Sleep(300 * time.Millisecond)
	}
	// No sleep for a double count to show: the stop drains what was pulled,
	// so a copy counted twice is in the final rows below, which must equal
	// the oracle's exactly; what was not pulled is not counted at all.
	if err := c2.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if ws := c2.wait(t, 60*time.Second); ws.ExitStatus() != 0 {
		t.Fatalf("run 2 exited %v; stderr (tail):\n%s", ws, c2.stderr.tail())
	}
	got := currentRowsOf(db)
	if len(got) != len(k.want.Final) {
		t.Errorf("%d windows, want %d", len(got), len(k.want.Final))
	}
	for key, w := range k.want.Final {
		if r := got[key]; r.RevenueMicros != w.RevenueMicros || r.EventCount != w.Count {
			t.Errorf("%v: %s (%d events), want %v", key, model.FormatMicros(r.RevenueMicros), r.EventCount, w)
		}
	}
	wantPubSubAudit(t, openSQLite(t, db), published, len(k.want.Conflicts), len(k.want.Quarantined), len(k.want.TooLate))
	return db
}

// wantPubSubAudit checks a Pub/Sub run's audit tables: as many rows as the
// oracle has, each carrying byte for byte the payload published under its
// message id (its source_position), whichever run archived it: the
// conflicts are read back from the archive after the dedup step.
func wantPubSubAudit(t *testing.T, db sink.Reader, published map[string]string, conflicts, quarantined, tooLate int) {
	t.Helper()
	ctx := context.Background()
	late, err := sinktest.TooLate(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sinktest.Conflicts(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := sinktest.Quarantined(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != conflicts || len(qs) != quarantined || len(late) != tooLate {
		t.Errorf("audit rows: %d conflicts, %d quarantined, %d too late; want %d, %d, %d", len(cs), len(qs), len(late), conflicts, quarantined, tooLate)
	}
	check := func(table, pos string, payload []byte) {
		id, ok := strings.CutPrefix(pos, "pubsub:")
		if want, known := published[id]; !ok || !known || string(payload) != want {
			t.Errorf("%s %s: payload %q, want the message's %q", table, pos, payload, want)
		}
	}
	for _, c := range cs {
		check("conflict_events", c.Position, c.Payload)
	}
	for _, q := range qs {
		check("quarantined_events", q.Position, q.Payload)
	}
	for _, l := range late {
		check("too_late_events", l.Position, l.Payload)
	}
}

// An archive that cannot be written (here: its partition folder is a file,
// as good as a full or read-only disk) fails the job within
// --pubsub-archive-fail-after: exit 1 and a clear message.
func TestPubSubUnwritableArchiveExits1(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the launcher as a child process")
	}
	launchBin, pstestBin := buildBinaries(t)
	addr := startPstestProcess(t, pstestBin)
	dir := t.TempDir()
	archive := filepath.Join(dir, "archive")
	if err := os.MkdirAll(archive, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(archive, "pubsub"), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	publishLog(t, addr, killLog(20, 1, false))
	start := time.Now()
	c := startChild(t, launchBin, addr, nil, "--source=pubsub:"+testSub, "--pubsub-archive="+archive,
		"--sink=sqlite:"+filepath.Join(dir, "revenue.db"), "--idle-timeout=1h", "--pubsub-archive-fail-after=3s")
	ws := c.wait(t, 60*time.Second)
	took := time.Since(start)
	stderr := c.stderr.String()
	if ws.ExitStatus() != ExitFailed || !strings.Contains(stderr, "cannot write for") || !strings.Contains(stderr, "--pubsub-archive-fail-after=3s") {
		t.Fatalf("exit %v after %s, want 1 with the archive error; stderr:\n%s", ws, took, stderr)
	}
	t.Logf("failed after %s (limit 3s, plus the job's start)", took.Round(time.Millisecond))
}

// Off prism, workers are other machines: a local archive is refused before
// any work, a GCS one accepted.
func TestPubSubLocalArchiveRefusedOffPrism(t *testing.T) {
	o := Defaults()
	o.Source, o.Runner = "pubsub:"+testSub, "dataflow"
	// A sink every worker reaches, so that the archive is what is judged.
	o.Sink = sink.Spec{Scheme: sink.SchemeBigQuery, Project: "p", Dataset: "d"}
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--pubsub-archive") || !strings.Contains(err.Error(), "gs://BUCKET/PATH") {
		t.Errorf("local archive on dataflow: %v", err)
	}
	o.PubSub.ArchiveDir = "gs://bucket/archive"
	if err := o.Validate(); err != nil {
		t.Errorf("GCS archive on dataflow refused: %v", err)
	}
}
