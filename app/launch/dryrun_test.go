package launch

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"

	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/testing/dryruntest"
)

// TestDryRun: --dry-run=FILE builds the pipeline each runner would be sent
// and writes its portable proto, exit 0, opening no sink and contacting no
// service (the job server, Pub/Sub, GCS and BigQuery all point at a
// tripwire); the proto passes the runner's capability check, so on Flink
// and universal it has no processing-time timer family and no bundle
// finalization, whatever the sink (the BigQuery flush runs on the job's
// clock). A pipeline that needs what the runner lacks (EARLY driven by
// processing-time timers, --early-source=timer, on Flink) is refused in one
// line, exit 2, before any submission: the same check every submission
// passes.
func TestDryRun(t *testing.T) {
	addr, dialed := dryruntest.Tripwire(t)
	for _, env := range []string{"PUBSUB_EMULATOR_HOST", "STORAGE_EMULATOR_HOST", "BIGQUERY_EMULATOR_HOST", "BIGQUERY_STORAGE_EMULATOR_HOST"} {
		t.Setenv(env, addr)
	}
	reset := runnerFlags(t)
	project, region := *gcpopts.Project, *gcpopts.Region
	staging := flag.Lookup("staging_location")
	oldStaging := staging.Value.String()
	t.Cleanup(func() {
		*gcpopts.Project, *gcpopts.Region = project, region
		staging.Value.Set(oldStaging)
	})
	src := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"))
	dir := t.TempDir()
	runners := map[string][]string{
		"prism":     {"--runner=prism"},
		"flink":     {"--runner=flink", "--endpoint=" + addr},
		"universal": {"--runner=universal", "--endpoint=" + addr},
		"dataflow":  {"--runner=dataflow", "--project=my-project", "--region=europe-west1", "--staging_location=gs://bucket/staging"},
	}
	const refusal = "the %s runner lacks processing-time timers, which HourlyRevenue/EarlyTicks/transforms.earlyTickFn"
	for _, runner := range []string{"prism", "flink", "universal", "dataflow"} {
		for _, sink := range []string{"sqlite", "bigquery", "bigquery-early-timer"} {
			t.Run(runner+"/"+sink, func(t *testing.T) {
				reset()
				db := filepath.Join(dir, runner+".db")
				spec := []string{"--sink=sqlite:" + db}
				if sink != "sqlite" {
					spec = []string{"--sink=bigquery:my-project.revenue"}
				}
				if sink == "bigquery-early-timer" {
					spec = append(spec, "--early-source=timer")
				}
				out := filepath.Join(dir, runner+"-"+sink+".json")
				args := append(append(append([]string{}, runners[runner]...), "--source="+src, "--follow", "--shared-filesystem", "--dry-run="+out), spec...)
				var stdout, stderr bytes.Buffer
				code := Main(args, &stdout, &stderr)
				refused := sink == "bigquery-early-timer" && (runner == "flink" || runner == "universal")
				if refused {
					want := "launch: --runner=" + runner + ": " + strings.Replace(refusal, "%s", runner, 1)
					if code != ExitUsage || !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
						t.Fatalf("launch %s: exit %d, stderr %q; want exit 2 and one line starting %q", strings.Join(args, " "), code, stderr.String(), want)
					}
					if _, err := os.Stat(out); err == nil {
						t.Errorf("a refused dry run wrote %s", out)
					}
					return
				}
				if code != 0 {
					t.Fatalf("launch %s: exit %d, stderr %s", strings.Join(args, " "), code, stderr.String())
				}
				if _, err := os.Stat(db); err == nil {
					t.Errorf("the dry run opened the sink: %s exists", db)
				}
				uses := dryruntest.DryRunProto(t, out, runner)
				if len(uses[capability.UserState]) == 0 || len(uses[capability.SelfCheckpointing]) == 0 {
					t.Errorf("the proto has no stateful step or no splittable source: %v", uses)
				}
				if runner == "flink" || runner == "universal" {
					for _, f := range []capability.Feature{capability.ProcessingTimeTimers, capability.BundleFinalization} {
						if len(uses[f]) > 0 {
							t.Errorf("%s: the proto uses %v in %v", runner, f, uses[f])
						}
					}
				}
			})
		}
	}
	// The bare switch writes the proto to stdout, and nothing else there.
	t.Run("flink/stdout", func(t *testing.T) {
		reset()
		args := append(append([]string{}, runners["flink"]...), "--source="+src, "--follow", "--shared-filesystem", "--dry-run", "--sink=bigquery:my-project.revenue")
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != 0 {
			t.Fatalf("launch %s: exit %d, stderr %s", strings.Join(args, " "), code, stderr.String())
		}
		out := filepath.Join(dir, "stdout.json")
		if err := os.WriteFile(out, stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if uses := dryruntest.DryRunProto(t, out, "flink"); len(uses[capability.ProcessingTimeTimers]) > 0 {
			t.Errorf("the proto on stdout uses processing-time timers in %v", uses[capability.ProcessingTimeTimers])
		}
	})
	if n := dialed.Load(); n != 0 {
		t.Errorf("the dry runs made %d connections to the service addresses", n)
	}
}

// TestDryRunMakesNoStorageClient: a dry run reading gs:// makes no GCS client, whose creation
// looks up credentials (the metadata server at 169.254.169.254, DNS): the control folder beside
// the source (gs://bucket/log/_control) is checked by name only. GOOGLE_APPLICATION_CREDENTIALS
// names a FIFO: a client made opens it to read its credentials, which opens the writer blocked
// on it here, so the test cannot pass if a client is made.
func TestDryRunMakesNoStorageClient(t *testing.T) {
	addr, dialed := dryruntest.Tripwire(t)
	for _, env := range []string{"PUBSUB_EMULATOR_HOST", "BIGQUERY_EMULATOR_HOST", "BIGQUERY_STORAGE_EMULATOR_HOST"} {
		t.Setenv(env, addr)
	}
	creds := filepath.Join(t.TempDir(), "credentials.json")
	if err := syscall.Mkfifo(creds, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", creds)
	t.Setenv("STORAGE_EMULATOR_HOST", "") // with an emulator the client reads no credentials
	// A new key of internal/files' client cache, so no gs:// client an earlier test made is reused.
	t.Setenv("AWS_ENDPOINT_URL", "http://"+addr+"/"+filepath.Base(filepath.Dir(creds)))
	var closing, read atomic.Bool
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for {
			f, err := os.OpenFile(creds, os.O_WRONLY, 0) // blocks until a reader opens it
			if err != nil {
				return
			}
			if closing.Load() {
				f.Close()
				return
			}
			read.Store(true)
			f.WriteString("{}") // not credentials: the SDK falls back to an unauthenticated client
			f.Close()
		}
	}()
	reset := runnerFlags(t)
	defer reset()
	out := filepath.Join(t.TempDir(), "job.json")
	args := []string{"--runner=flink", "--endpoint=" + addr, "--source=gs://bucket/log", "--sink=bigquery:my-project.revenue", "--dry-run=" + out}
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	closing.Store(true)
	if r, err := os.OpenFile(creds, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil { // releases the writer
		<-wrote
		r.Close()
	}
	if code != 0 {
		t.Fatalf("launch %s: exit %d, stderr %s", strings.Join(args, " "), code, stderr.String())
	}
	if read.Load() {
		t.Errorf("launch %s made a GCS client: it read the credentials", strings.Join(args, " "))
	}
	if n := dialed.Load(); n != 0 {
		t.Errorf("the dry run made %d connections to the service addresses", n)
	}
}
