package capability_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	pipepb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/pipeline_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/periodic"

	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/internal/cli"
)

func TestForNamesEveryRegisteredRunner(t *testing.T) {
	for runner, want := range map[string]string{
		"": "prism", "prism": "prism", "PrismRunner": "prism",
		"flink": "flink", "FlinkRunner": "flink",
		"universal": "universal", "portable": "universal", "PortableRunner": "universal",
		"dataflow": "dataflow", "DataflowRunner": "dataflow",
		"spark": "spark", "direct": "direct",
		"Flink":        "flink",     // Beam's registry is case-insensitive
		"samza-future": "universal", // unknown: the conservative profile
	} {
		if got := capability.For(runner).Name; got != want {
			t.Errorf("For(%q) = %s, want %s", runner, got, want)
		}
	}
}

// Prism's profile follows capability.IsPrism and nothing else: the two
// agree on every value, and a value IsPrism refuses ("Prism", which Beam's
// case-sensitive registry does not know either) gets no prism profile.
func TestPrismProfileIsIsPrism(t *testing.T) {
	for _, runner := range []string{"", "prism", "PrismRunner", "Prism", "PRISM", "prismrunner", " prism",
		"universal", "flink", "dataflow", "direct", "spark", "samza-future"} {
		got := capability.For(runner).Name == "prism"
		if want := capability.IsPrism(runner); got != want {
			t.Errorf("--runner=%q: capability profile %s, capability.IsPrism %v", runner, capability.For(runner).Name, want)
		}
	}
	for _, p := range capability.Profiles() {
		if p.Name == "prism" && len(p.Runners) != 0 {
			t.Errorf("the prism profile lists its own runner names %q: IsPrism decides them", p.Runners)
		}
	}
}

// The universal profile is conservative: it lacks everything Flink lacks.
func TestUniversalLacksWhatFlinkLacks(t *testing.T) {
	u := capability.For("universal")
	for _, l := range capability.For("flink").Lacks {
		if u.Has(l.Feature) {
			t.Errorf("universal offers %s, which Flink lacks", l.Feature)
		}
	}
	if !capability.For("prism").Has(capability.LiveMetrics) || capability.For("flink").Has(capability.LiveMetrics) ||
		u.Has(capability.LiveMetrics) || capability.For("dataflow").Has(capability.LiveMetrics) {
		t.Error("live metrics: want prism only")
	}
}

// Every proof that quotes a filter line of Beam's integration suite quotes
// one that is there, in the list it names.
func TestProofsQuoteBeamsFilters(t *testing.T) {
	src := integrationGo(t)
	lists := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)var (\w+Filters) = \[\]string\{(.*?)\n\}`).FindAllStringSubmatch(src, -1) {
		lists[m[1]] = m[2]
	}
	if len(lists) < 5 {
		t.Fatalf("found %d filter lists in integration.go, want the runners'", len(lists))
	}
	quoted := regexp.MustCompile(`((?:\w+Filters(?: and )?)+): (.*)`)
	checked := 0
	for _, p := range capability.Profiles() {
		for _, l := range p.Lacks {
			if l.Proof == "" || l.Instead == "" {
				t.Errorf("%s lacks %s: want a proof and what the pipeline does instead", p.Name, l.Feature)
			}
			m := quoted.FindStringSubmatch(l.Proof)
			if m == nil {
				continue
			}
			names := regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(m[2], -1)
			for _, list := range strings.Split(m[1], " and ") {
				body, ok := lists[list]
				if !ok {
					t.Errorf("%s / %s: no list %s in integration.go", p.Name, l.Feature, list)
					continue
				}
				for _, n := range names {
					if !strings.Contains(body, `"`+n[1]+`"`) {
						t.Errorf("%s / %s: %s does not hold %q", p.Name, l.Feature, list, n[1])
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d quoted filter lines checked", checked)
}

func integrationGo(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/apache/beam/sdks/v2").Output()
	if err != nil {
		t.Skipf("locating the Beam module: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "go", "test", "integration", "integration.go"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func init() {
	register.DoFn3x0[timers.Provider, string, int](&processingTimerFn{})
	register.DoFn3x0[timers.Provider, string, int](&eventTimerFn{})
	register.DoFn3x0[state.Provider, string, int](&mapStateFn{})
	register.DoFn3x0[beam.BundleFinalization, string, int](&finalizingFn{})
	register.Function2x0(kv)
	register.Emitter2[string, int]()
}

func kv(_ []byte, emit func(string, int)) {}

type processingTimerFn struct{ T timers.ProcessingTime }

func (f *processingTimerFn) ProcessElement(tp timers.Provider, _ string, _ int) {
	f.T.Set(tp, time.Now())
}
func (f *processingTimerFn) OnTimer(context.Context, timers.Provider, string, timers.Context) {}

type eventTimerFn struct{ T timers.EventTime }

func (f *eventTimerFn) ProcessElement(tp timers.Provider, _ string, _ int) {
	f.T.Set(tp, time.Now())
}
func (f *eventTimerFn) OnTimer(context.Context, timers.Provider, string, timers.Context) {}

type mapStateFn struct{ M state.Map[string, int] }

func (f *mapStateFn) ProcessElement(state.Provider, string, int) {}

type finalizingFn struct{}

func (f *finalizingFn) ProcessElement(beam.BundleFinalization, string, int) {}

// marshal builds a pipeline of one keyed input and the DoFn, as a runner
// receives it.
func marshal(t *testing.T, streaming bool, dofn any) *pipepb.Pipeline {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	imp := beam.Impulse(s)
	if streaming {
		imp = periodic.Impulse(s, time.Now(), time.Now().Add(time.Hour), time.Minute, false)
	}
	beam.ParDo0(s, dofn, beam.ParDo(s, kv, imp))
	pb, err := cli.PipelineProto(context.Background(), "flink", p)
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

func TestCheckRefusesWhatTheRunnerLacks(t *testing.T) {
	cases := []struct {
		name      string
		streaming bool
		dofn      any
		uses      capability.Feature
		refusedBy []string // profiles that refuse it (others accept)
	}{
		{"processing-time timer, streaming", true, &processingTimerFn{T: timers.InProcessingTime("t")}, capability.ProcessingTimeTimers,
			[]string{"flink", "universal", "spark", "direct"}},
		{"processing-time timer, batch", false, &processingTimerFn{T: timers.InProcessingTime("t")}, capability.ProcessingTimeTimersInBatch,
			[]string{"flink", "universal", "dataflow", "spark", "direct"}},
		{"event-time timer", true, &eventTimerFn{T: timers.InEventTime("t")}, capability.EventTimeTimers,
			[]string{"spark", "direct"}}, // spark and direct: the periodic impulse (an SDF) already
		{"map state", false, &mapStateFn{M: state.MakeMapState[string, int]("m")}, capability.MapState,
			[]string{"flink", "universal", "spark", "direct"}},
		{"bundle finalization", false, &finalizingFn{}, capability.BundleFinalization,
			[]string{"flink", "universal", "spark", "direct"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pb := marshal(t, c.streaming, c.dofn)
			uses, err := capability.Uses(pb)
			if err != nil {
				t.Fatal(err)
			}
			if len(uses[c.uses]) == 0 {
				t.Fatalf("Uses = %v, want %s", uses, c.uses)
			}
			for _, p := range capability.Profiles() {
				err := capability.Check(pb, p)
				var r *capability.Refusal
				refused := errors.As(err, &r)
				if err != nil && !refused {
					t.Fatal(err)
				}
				if want := slices.Contains(c.refusedBy, p.Name); refused != want {
					t.Errorf("%s: Check = %v, want refused %v", p.Name, err, want)
				}
				if refused && strings.Contains(err.Error(), "\n") {
					t.Errorf("%s: refusal is not one line: %q", p.Name, err)
				}
			}
		})
	}
}

// TestNamed: every runner the table lists, in any case, and prism's names
// are named; a typo is not (For would guess universal for it).
func TestNamed(t *testing.T) {
	for _, r := range []string{"prism", "flink", "FlinkRunner", "FLINK", "universal", "PortableRunner", "dataflow", "spark", "direct"} {
		if !capability.Named(r) {
			t.Errorf("Named(%q) = false, want true", r)
		}
	}
	for _, r := range []string{"flnk", "samza"} {
		if capability.Named(r) {
			t.Errorf("Named(%q) = true, want false", r)
		}
	}
}

// TestRegistered: only the spellings Beam's runner registry takes (beam.Run exits the process for
// any other), where Named ignores case.
func TestRegistered(t *testing.T) {
	for _, r := range []string{"prism", "PrismRunner", "flink", "FlinkRunner", "universal", "portable", "PortableRunner", "dataflow", "DataflowRunner", "spark", "direct"} {
		if !capability.Registered(r) {
			t.Errorf("Registered(%q) = false, want true", r)
		}
	}
	for _, r := range []string{"", "Prism", "FLINK", "Dataflow", "flnk", "samza"} {
		if capability.Registered(r) {
			t.Errorf("Registered(%q) = true, want false", r)
		}
	}
}
