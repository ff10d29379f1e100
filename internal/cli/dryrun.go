package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/gcpopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/revenue-stream/hourly/internal/capability"
)

// DryRunStdout is the destination of a bare --dry-run.
const DryRunStdout = "-"

// DryRun binds --dry-run: "" (off), DryRunStdout for the bare switch, or --dry-run=FILE's file.
func DryRun(p *string) Value[string] {
	return Switch(p, func(s string) (string, error) {
		switch s {
		case "true":
			return DryRunStdout, nil
		case "false":
			return "", nil
		case "":
			return "", fmt.Errorf("want --dry-run or --dry-run=FILE")
		}
		return s, nil
	}, func(s string) string { return s })
}

// CheckedProto is the pipeline proto runner would be sent for p, refused with a one-line
// *capability.Refusal when it needs what the runner lacks.
func CheckedProto(ctx context.Context, runner string, p *beam.Pipeline) (*pipepb.Pipeline, error) {
	pb, err := PipelineProto(ctx, runner, p)
	if err == nil {
		err = capability.Check(pb, capability.For(runner))
	}
	if err != nil {
		return nil, err
	}
	return pb, nil
}

// WriteDryRun writes pb as protojson to stdout for DryRunStdout, else to the file dest.
func WriteDryRun(dest string, stdout io.Writer, pb *pipepb.Pipeline) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(pb)
	if err != nil {
		return fmt.Errorf("--dry-run: encoding the pipeline proto: %w", err)
	}
	b = append(b, '\n')
	if dest == DryRunStdout {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(dest, b, 0o644); err != nil {
		return fmt.Errorf("--dry-run=%s: %w", dest, err)
	}
	return nil
}

// CheckRunner refuses a --runner Beam's registry does not take as spelled:
// beam.Run would end the process after the work began. "" is Beam's default,
// prism.
func CheckRunner(runner string) error {
	return ErrIf(runner != "" && !capability.Registered(runner), "--runner=%s: not a runner Beam registers under that name: want prism, flink, universal or dataflow (exactly so spelled; also PrismRunner, FlinkRunner, PortableRunner, portable, DataflowRunner)", runner)
}

// CheckDryRunFlags refuses a --dry-run (dest; "": none) on Dataflow without the flags the SDK
// would otherwise look up in credentials or gcloud.
func CheckDryRunFlags(dest, runner string) error {
	if dest == "" || capability.For(runner).Name != "dataflow" {
		return nil
	}
	var missing []string
	if *gcpopts.Project == "" {
		missing = append(missing, "--project=PROJECT")
	}
	if *gcpopts.Region == "" && os.Getenv("CLOUDSDK_COMPUTE_REGION") == "" {
		missing = append(missing, "--region=REGION")
	}
	if f := flag.Lookup("staging_location"); f == nil || !strings.HasPrefix(f.Value.String(), "gs://") {
		missing = append(missing, "--staging_location=gs://BUCKET/PATH")
	}
	if len(missing) > 0 {
		return fmt.Errorf("--dry-run with --runner=%s needs %s (the dry run looks nothing up in the environment's credentials or gcloud)",
			runner, strings.Join(missing, " "))
	}
	return nil
}

// PipelineProto is the portable pipeline proto runner would be sent for p, in the environment
// it would pick; it contacts nothing.
func PipelineProto(ctx context.Context, runner string, p *beam.Pipeline) (*pipepb.Pipeline, error) {
	edges, _, err := p.Build()
	if err != nil {
		return nil, fmt.Errorf("building the pipeline: %w", err)
	}
	urn, config := jobopts.GetEnvironmentUrn(ctx), environmentConfig
	switch {
	case capability.For(runner).Name == "dataflow":
		config = dataflowImage
	case jobopts.IsLoopback() || (*jobopts.EnvironmentType == "" && WorkersInProcess(runner, "")):
		urn, config = graphx.URNEnvExternal, func(context.Context) string { return *jobopts.EnvironmentConfig }
	}
	env, err := graphx.CreateEnvironment(ctx, urn, config)
	if err != nil {
		return nil, fmt.Errorf("pipeline environment: %w", err)
	}
	pb, err := graphx.Marshal(edges, &graphx.Options{Environment: env, PipelineResourceHints: jobopts.GetPipelineResourceHints()})
	if err != nil {
		return nil, fmt.Errorf("marshalling the pipeline: %w", err)
	}
	return pb, nil
}

// environmentConfig is --environment_config or the SDK's default container, read without
// jobopts.GetEnvironmentConfig's side effect of setting the flag.
func environmentConfig(context.Context) string {
	if c := *jobopts.EnvironmentConfig; c != "" {
		return c
	}
	return core.DefaultDockerImage
}

// dataflowImage is the container the Dataflow runner names: its flags', else Dataflow's build.
func dataflowImage(ctx context.Context) string {
	for _, name := range []string{"sdk_container_image", "worker_harness_container_image"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return f.Value.String()
		}
	}
	if c := environmentConfig(ctx); c != core.DefaultDockerImage {
		return c
	}
	return "gcr.io/cloud-dataflow/v1beta3/beam_go_sdk:" + core.SdkVersion
}

// WorkersInProcess reports whether a job on runner with the given --environment_type has its
// SDK workers in this process (prism in LOOPBACK), seeing local paths and the launcher's memory.
func WorkersInProcess(runner, environmentType string) bool {
	return capability.IsPrism(runner) && (environmentType == "" || strings.EqualFold(environmentType, "loopback"))
}

// LocalPath reports whether only this machine reaches path: no scheme, file:// or memfs://.
func LocalPath(path string) bool {
	scheme, _, ok := strings.Cut(path, "://")
	return !ok || strings.EqualFold(scheme, "file") || strings.EqualFold(scheme, "memfs")
}

// Placement checks that the parts a job's workers read or write are reachable from them.
type Placement struct {
	// Runner and EnvironmentType are Beam's --runner and --environment_type.
	Runner, EnvironmentType string
	// Shared is --shared-filesystem: every worker sees this machine's local paths.
	Shared bool

	err error
}

// Local names a local-only part as the user spelled it ("--sink=sqlite:revenue.db") and what to
// use instead; the first one wins.
func (p *Placement) Local(flag, instead string) {
	if p.err != nil || p.Shared || WorkersInProcess(p.Runner, p.EnvironmentType) {
		return
	}
	p.err = fmt.Errorf("%s is local to this machine, but with %s the workers run in other processes or on other machines: %s, "+
		"or pass --shared-filesystem if every worker sees this machine's paths", flag, p.where(), instead)
}

// Here names a part that works only in the launcher's process whatever the filesystem shares
// ("--sink=console prints on ..."), and what to use instead; the first refusal wins.
func (p *Placement) Here(part, instead string) {
	if p.err != nil || WorkersInProcess(p.Runner, p.EnvironmentType) {
		return
	}
	p.err = fmt.Errorf("%s, but with %s the workers run in other processes or on other machines: %s", part, p.where(), instead)
}

// where names the flag that puts the workers elsewhere.
func (p *Placement) where() string {
	if capability.IsPrism(p.Runner) {
		return "--environment_type=" + p.EnvironmentType
	}
	return "--runner=" + p.Runner
}

// Err is the refusal, or nil when every part is reachable.
func (p *Placement) Err() error { return p.err }

// UseSelfAsWorker makes this binary the worker binary when workers run in other processes and
// --worker_binary is not set: the SDK would otherwise compile the caller's library package.
func UseSelfAsWorker() error {
	if *jobopts.WorkerBinary != "" || jobopts.IsLoopback() {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("worker binary: %w (pass --worker_binary)", err)
	}
	*jobopts.WorkerBinary = self
	return nil
}
