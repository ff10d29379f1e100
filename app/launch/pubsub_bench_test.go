package launch

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	gpubsub "cloud.google.com/go/pubsub/v2"
	"github.com/revenue-stream/hourly/testing/pubsubtest"
)

// jobBenchMessages is how many messages each side of the job benchmark reads.
const jobBenchMessages = 60_000

// BenchmarkPubSubJobVsBarePull runs, per iteration, against one pstest
// server in another process: a bare loop of 4 pullers that only pull and
// acknowledge jobBenchMessages 200-byte messages, then the whole job (the
// launcher as a child process: pull, archive, acknowledge, validate, dedup,
// aggregate, SQLite sink) over as many new messages. The job's rate runs
// from its first counted event to its last (its start-up excluded), read
// from the sink's rows, which EARLY firings refresh every second. Reported:
// both rates, their ratio, and the job process's CPU per 1,000 messages
// (reader and pipeline together; the reader's own share is
// sources/pubsub's BenchmarkReaderVsBarePull).
//
//	go test ./app/launch -run '^$' -bench PubSubJobVsBarePull -benchtime 1x -count 3
func BenchmarkPubSubJobVsBarePull(b *testing.B) {
	launchBin, pstestBin := buildBinaries(b)
	addr := startPstestProcess(b, pstestBin)
	b.Setenv("PUBSUB_EMULATOR_HOST", addr)
	c, err := gpubsub.NewClient(context.Background(), testProject)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < b.N; i++ {
		pubsubtest.Publish(b, c, testTopic, jobBenchMessages)
		_, bare := pubsubtest.BarePull(b, c, testSub, 4, 1000, jobBenchMessages)

		pubsubtest.Publish(b, c, testTopic, jobBenchMessages)
		dir := b.TempDir()
		db := filepath.Join(dir, "revenue.db")
		child := startChild(b, launchBin, addr, nil, "--source=pubsub:"+testSub, "--pubsub-archive="+filepath.Join(dir, "archive"),
			"--sink=sqlite:"+db, "--idle-timeout=1h", "--early=1s", "--log-level=warn")
		var first, last time.Time
		var firstCount int64
		deadline := time.Now().Add(5 * time.Minute)
		for {
			var counted int64
			for _, r := range currentRowsOf(db) {
				counted += r.EventCount
			}
			if counted > 0 && first.IsZero() {
				first, firstCount = time.Now(), counted
			}
			if counted >= jobBenchMessages {
				last = time.Now()
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("job counted %d of %d in 5 minutes; stderr:\n%s", counted, jobBenchMessages, child.stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = child.cmd.Process.Signal(syscall.SIGINT)
		child.wait(b, 2*time.Minute)
		ru := child.cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		job := float64(jobBenchMessages-firstCount) / last.Sub(first).Seconds()
		b.ReportMetric(bare, "bare_msg/s")
		b.ReportMetric(job, "job_msg/s")
		b.ReportMetric(job/bare, "ratio")
		b.ReportMetric(float64(cpu.Milliseconds())/jobBenchMessages*1000, "job_cpu_ms/1k_msg")
	}
}
