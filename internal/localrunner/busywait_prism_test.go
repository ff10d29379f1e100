package localrunner

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
)

// The reproducer of prism's busy wait (v2.77.0,
// runners/prism/internal/stage.go, stage.Execute): the progress loop
// selects on the bundle's response, the progress ticker and dataReady, the
// channel closed once every output of the bundle has sent its last data.
// Once closed, dataReady is ready at every select, so the loop spins on it
// until the response arrives. A stage without outputs (a sink) has
// dataReady closed before the bundle starts: the loop burns a core for the
// whole bundle. The one-line fix, after `dataFinished = true` in that case:
// `dataReady = nil` (a nil channel is never ready).
//
// Each bundle here is one call of a splittable DoFn that sleeps
// bundleSleep and checkpoints (ResumeProcessingIn), so the runner is idle
// but for its own loop; the benchmark reports the process CPU per bundle.
// A stage with no output burns about bundleSleep per bundle; the same stage
// with an output (which it never writes to, read behind a Reshuffle) burns
// next to nothing.
//
//	go test ./internal/localrunner -run XXX -bench PrismBundleWait -benchtime 3x

const bundleSleep = 20 * time.Millisecond

// bundlesFn runs Bundles bundles of one call each, sleeping in each.
type bundlesFn struct{ Bundles int64 }

func (f *bundlesFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: f.Bundles}
}

func (f *bundlesFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (f *bundlesFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 { return r.Size() }

func (f *bundlesFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

func (f *bundlesFn) call(rt *sdf.LockRTracker) sdf.ProcessContinuation {
	if !rt.TryClaim(rt.GetRestriction().(offsetrange.Restriction).Start) {
		return sdf.StopProcessing()
	}
	time.Sleep(bundleSleep)
	return sdf.ResumeProcessingIn(0)
}

// sinkBundlesFn has no output, as a sink's write step.
type sinkBundlesFn struct{ bundlesFn }

func (f *sinkBundlesFn) ProcessElement(rt *sdf.LockRTracker, _ []byte) sdf.ProcessContinuation {
	return f.call(rt)
}

// outputBundlesFn declares an output and never writes to it.
type outputBundlesFn struct{ bundlesFn }

func (f *outputBundlesFn) ProcessElement(rt *sdf.LockRTracker, _ []byte, _ func(int)) sdf.ProcessContinuation {
	return f.call(rt)
}

func discardInt(int) {}

func init() {
	register.DoFn2x1[*sdf.LockRTracker, []byte, sdf.ProcessContinuation](&sinkBundlesFn{})
	register.DoFn3x1[*sdf.LockRTracker, []byte, func(int), sdf.ProcessContinuation](&outputBundlesFn{})
	register.Function1x0(discardInt)
	register.Emitter1[int]()
}

// cpuTime is this process's user + system CPU time: the SDK harness and
// prism run in it (loopback).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkPrismBundleWait(b *testing.B) {
	const bundles = 40
	for _, tc := range []struct {
		name  string
		build func(s beam.Scope)
	}{
		{"no-output", func(s beam.Scope) {
			beam.ParDo0(s, &sinkBundlesFn{bundlesFn{Bundles: bundles}}, beam.Impulse(s))
		}},
		{"unused-output", func(s beam.Scope) {
			out := beam.ParDo(s, &outputBundlesFn{bundlesFn{Bundles: bundles}}, beam.Impulse(s))
			beam.ParDo0(s, discardInt, beam.Reshuffle(s, out))
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var cpu, wall time.Duration
			for range b.N {
				p, s := beam.NewPipelineWithRoot()
				tc.build(s)
				c0, t0 := cpuTime(), time.Now()
				pr, err := prism.Execute(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
				wall += time.Since(t0)
				RemovePlaceholder(context.Background(), *jobopts.Endpoint, pr.JobID())
			}
			n := float64(b.N * bundles)
			b.ReportMetric(float64(cpu.Milliseconds())/n, "cpu-ms/bundle")
			b.ReportMetric(float64(wall.Milliseconds())/n, "wall-ms/bundle")
			b.ReportMetric(float64(bundleSleep.Milliseconds()), "sleep-ms/bundle")
		})
	}
}
