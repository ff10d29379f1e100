package reconcile_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"

	"github.com/revenue-stream/hourly/app/reconcile"
	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/testing/dryruntest"
)

// TestDryRun: reconcile --dry-run=FILE builds the pipeline each runner would
// be sent and writes its portable proto, exit 0, opening no sink and
// contacting no service (the job server and the BigQuery endpoints point at
// a tripwire); the proto passes the runner's capability check, so on Flink
// and universal it has no processing-time timer and no bundle finalization;
// on Dataflow it needs --project, --region and --staging_location given, so
// that the SDK asks neither credentials nor gcloud.
func TestDryRun(t *testing.T) {
	addr, dialed := dryruntest.Tripwire(t)
	for _, env := range []string{"BIGQUERY_EMULATOR_HOST", "BIGQUERY_STORAGE_EMULATOR_HOST", "STORAGE_EMULATOR_HOST"} {
		t.Setenv(env, addr)
	}
	runner, envType, endpoint := *runners.Runner, *jobopts.EnvironmentType, *jobopts.Endpoint
	project, region := *gcpopts.Project, *gcpopts.Region
	staging := flag.Lookup("staging_location")
	oldStaging := staging.Value.String()
	t.Cleanup(func() {
		*runners.Runner, *jobopts.EnvironmentType, *jobopts.Endpoint = runner, envType, endpoint
		*gcpopts.Project, *gcpopts.Region = project, region
		staging.Value.Set(oldStaging)
	})
	src := writeLog(t, map[string][]string{"p0": {purchase("A", "2026-11-04T10:15:00Z", "u1", "1")}})
	dir := t.TempDir()
	for _, runner := range []string{"prism", "flink", "universal", "dataflow"} {
		for _, sink := range []string{"sqlite", "bigquery"} {
			t.Run(runner+"/"+sink, func(t *testing.T) {
				db := filepath.Join(dir, runner+".db")
				spec := "--sink=sqlite:" + db
				if sink == "bigquery" {
					spec = "--sink=bigquery:my-project.revenue"
				}
				out := filepath.Join(dir, runner+"-"+sink+".json")
				args := []string{"--runner=" + runner, "--source=" + src, spec, "--dry-run=" + out}
				switch runner {
				case "flink", "universal":
					args = append(args, "--endpoint="+addr, "--shared-filesystem")
				case "dataflow":
					args = append(args, "--project=my-project", "--region=europe-west1", "--staging_location=gs://bucket/staging", "--shared-filesystem")
				}
				var stdout, stderr bytes.Buffer
				if code := reconcile.Main(args, &stdout, &stderr); code != 0 {
					t.Fatalf("reconcile %s: exit %d, stderr %s", strings.Join(args, " "), code, stderr.String())
				}
				if _, err := os.Stat(db); err == nil {
					t.Errorf("the dry run opened the sink: %s exists", db)
				}
				uses := dryruntest.DryRunProto(t, out, runner)
				for _, f := range []capability.Feature{capability.ProcessingTimeTimers, capability.BundleFinalization} {
					if len(uses[f]) > 0 {
						t.Errorf("the proto uses %v in %v", f, uses[f])
					}
				}
			})
		}
	}
	if n := dialed.Load(); n != 0 {
		t.Errorf("the dry runs made %d connections to the service addresses", n)
	}
}
