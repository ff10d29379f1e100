package launch

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/cli"

	// gs:// paths for internal/files in every process of this binary, the workers included.
	_ "github.com/revenue-stream/hourly/internal/files/gcs"
	_ "github.com/revenue-stream/hourly/internal/files/s3" // s3:// paths
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources"
	"github.com/revenue-stream/hourly/sources/pubsub"
)

// buildJob builds the run's pipeline and its proto, checked against the runner's capability
// profile (cli.CheckedProto): Run makes a pipeline the runner cannot run a *ConfigError.
func (r *jobRun) buildJob(ctx context.Context) (*beam.Pipeline, *pipepb.Pipeline, error) {
	o, signal := r.o, r.signal
	// Each key's changelog continues where the sink left it (read on a worker).
	r.po.Published = o.Sink
	var read func(s beam.Scope) beam.PCollection
	if o.IsPubSub() {
		pso := o.pubsubOptions(r.po)
		pso.Stop = signal
		read = func(s beam.Scope) beam.PCollection { return pubsub.Read(s, o.Source, pso) }
	} else {
		// A restart re-reads only what dedup and the open windows need (seal.go).
		if !r.dry {
			var err error
			if r.fo.Resume, r.po.PublishedBound, err = resumePoints(ctx, o.Sink, r.sum.Source, r.po); err != nil {
				return nil, nil, err
			}
		}
		if signal.Enabled() && !r.dry {
			r.seal = newSealer(o.Sink, signal.Token, r.po, o.cadence().quiet, o.cadence().seal, o.profileRunner(), r.fo.Resume)
			r.onClose(r.seal.close)
		}
		source, fo := r.sum.Source, r.fo
		read = func(s beam.Scope) beam.PCollection {
			records, progress := sources.ReadFolder(s, source, fo)
			if signal.Enabled() { // the seal's evidence
				sink.WriteProgress(s, o.Sink, o.flushPolicy(), signal.Token, progress)
			}
			return records
		}
	}
	p, err := build(read, r.po, o.Sink, o.flushPolicy())
	if err != nil {
		return nil, nil, err
	}
	pb, err := cli.CheckedProto(ctx, o.profileRunner(), p)
	if err != nil && o.Rehearse != "" {
		return nil, nil, fmt.Errorf("--rehearse=%s: %w", o.Rehearse, err)
	} else if err != nil {
		return nil, nil, fmt.Errorf("--runner=%s: %w", o.Runner, err)
	}
	return p, pb, nil
}

// build is the design card's shape: read the source, compute, write.
func build(read func(beam.Scope) beam.PCollection, po pipeline.Options, spec sink.Spec, flush sink.FlushPolicy) (p *beam.Pipeline, err error) {
	// Graph construction reports misuse by panicking: make it a one-line error.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("building the pipeline: %v", r)
		}
	}()
	p, s := beam.NewPipelineWithRoot()
	records := read(s)
	out, err := pipeline.Build(s, records, po)
	if err != nil {
		return nil, err
	}
	sink.Write(s, spec, flush, out.Rows, out.TooLate, out.Conflicts, out.Quarantined)
	return p, nil
}

// settings are the effective pipeline settings as flags spell them, in the order of SPEC §6.
func settings(po pipeline.Options) []report.Figure {
	return []report.Figure{
		{Name: "window", Value: po.Triggers.Window.String()},
		{Name: "early", Value: po.Triggers.Early.String()},
		{Name: "ooo-bound", Value: po.Watermark.OutOfOrderBound.String()},
		{Name: "idle-timeout", Value: po.Watermark.IdleTimeout.String()},
		{Name: "idle-advance", Value: po.Watermark.IdleAdvance.String()},
		{Name: "allowed-lateness", Value: po.Triggers.AllowedLateness.String()},
		{Name: "dedup-retention", Value: po.DedupRetention.String()},
		{Name: "max-future", Value: po.Event.MaxFuture.String()},
		{Name: "max-age", Value: po.Event.MaxAge.String()},
		{Name: "max-line", Value: cli.FormatSize(po.Event.MaxLine)},
		{Name: "dimensions", Value: strings.Join(po.Event.Dimensions, ",")},
	}
}
