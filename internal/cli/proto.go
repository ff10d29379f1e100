package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/graphx"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/capability"
)

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
