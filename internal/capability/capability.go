// Package capability is the one table of what each Beam runner lacks of the
// features this pipeline could ask, and the check of a pipeline proto against
// it. Each entry names its proof (a filter line of Beam v2.78.0's
// sdks/go/test/integration/integration.go, or an issue) and what the pipeline
// does instead; an unknown job server gets the union of the portable lacks.
package capability

import (
	"fmt"
	"slices"
	"strings"
)

// Feature is something a pipeline may need of its runner.
type Feature string

// The features the table knows. Check reads those a pipeline proto shows;
// the launcher reads the others.
const (
	ProcessingTimeTimers        Feature = "processing-time timers"
	ProcessingTimeTimersInBatch Feature = "processing-time timers in a bounded job"
	EventTimeTimers             Feature = "event-time timers"
	// UserState is value, bag and combining state.
	UserState        Feature = "user state"
	MapState         Feature = "map state"
	SetState         Feature = "set state"
	OrderedListState Feature = "ordered list state"
	// BundleFinalization is ParDoPayload.requests_finalization.
	BundleFinalization Feature = "bundle finalization"
	// SelfCheckpointing: every splittable DoFn here returns ResumeProcessingIn
	// (sources/internal/sdfread, periodic.Impulse), so Check counts each one.
	SelfCheckpointing Feature = "self-checkpointing splittable DoFns"
	// LiveMetrics: the job service reports committed counters while the job runs.
	LiveMetrics Feature = "live metrics"
)

// Lack is one thing a runner does not offer.
type Lack struct {
	Feature Feature
	// Proof is where Beam says so: a filter line or an issue.
	Proof string
	// Instead is what this pipeline does about it.
	Instead string
}

// Profile is one runner's entry.
type Profile struct {
	// Name is prism, flink, universal, dataflow, spark or direct.
	Name string
	// Runners are the --runner values that select it; prism's has none
	// (IsPrism decides).
	Runners []string
	Lacks   []Lack
}

// Has reports whether the runner offers f.
func (p Profile) Has(f Feature) bool {
	_, lacks := p.Lack(f)
	return !lacks
}

// Lack returns the entry saying the runner lacks f, if it does; lacking
// processing-time timers implies lacking them in a bounded job.
func (p Profile) Lack(f Feature) (Lack, bool) {
	for _, l := range p.Lacks {
		if l.Feature == f {
			return l, true
		}
	}
	if f == ProcessingTimeTimersInBatch {
		return p.Lack(ProcessingTimeTimers)
	}
	return Lack{}, false
}

const filters = "sdks/go/test/integration/integration.go"

// What the pipeline does instead, shared by profiles.
var (
	noProcessingTimers = "the job's clock is a periodic impulse (internal/clock): it drives the EARLY refresh (--early-source=impulse, the default here), " +
		"the BigQuery flush of a streaming job and the discovery of new partitions; a bounded job's BigQuery rows flush at the size limits and at the end of the input"
	noFinalization = "no DoFn requests it: the Pub/Sub source acknowledges a message once its archive write is durable"
	noMapState     = "the pipeline uses value and bag state only"
	noLiveMetrics  = "the launcher gets no committed counters while the job runs: nothing that needs them (progress from the runner's figures, sealing resume points) may rely on them (docs/restart.md)"
)

// profiles is the table. Keep docs/operations.md's per-runner table in
// step (TestOperationsTableMatchesProfiles).
var profiles = []Profile{
	{Name: "prism"}, // Beam's local runner, in this process or as a job server; the default (selected by IsPrism)
	{
		Name:    "flink", // Flink's portable runner through its job server (--endpoint)
		Runners: []string{"flink", "FlinkRunner"},
		Lacks: []Lack{
			{ProcessingTimeTimers, filters + `, flinkFilters: "TestTimers_ProcessingTime.*", // Flink doesn't support processing time timers.`, noProcessingTimers},
			{BundleFinalization, filters + `, flinkFilters: "TestParDoBundleFinalizer.*" (no support for BundleFinalizer)`, noFinalization},
			{MapState, filters + `, flinkFilters: "TestMapState", "TestMapStateClear" // Flink does not support map based state types.`, noMapState},
			{SetState, filters + `, flinkFilters: "TestSetState", "TestSetStateClear"`, noMapState},
			{OrderedListState, filters + `, flinkFilters: "TestOrderedListState"`, noMapState},
			{LiveMetrics, "Beam Java's job server (JobInvocation.getMetrics) returns a job's metrics only once it has ended; issue #24 item 2", noLiveMetrics},
		},
	},
	{
		// An unknown portable job server (--endpoint), taken to be Flink's: what Flink lacks, plus the
		// state kinds Beam's portable filters list. Not a job server without self-checkpointing
		// or timers (portableFilters: "TestCheckpointing", "TestTimers.*", Python's portable
		// runner): the sources and every stateful step need both, so it could not run this pipeline.
		Name:    "universal",
		Runners: []string{"universal", "portable", "PortableRunner"},
		Lacks: []Lack{
			{ProcessingTimeTimers, filters + `, flinkFilters: "TestTimers_ProcessingTime.*" (the job server may be Flink's)`, noProcessingTimers},
			{BundleFinalization, filters + `, portableFilters and flinkFilters: "TestParDoBundleFinalizer.*"`, noFinalization},
			{MapState, filters + `, portableFilters: "TestMapState" // The portable runner does not support user map states.`, noMapState},
			{SetState, filters + `, portableFilters: "TestSetState"`, noMapState},
			{OrderedListState, filters + `, portableFilters: "TestOrderedListState"`, noMapState},
			{LiveMetrics, "the job server may be Flink's, which reports metrics only once the job has ended (issue #24 item 2)", noLiveMetrics},
		},
	},
	{
		Name:    "dataflow", // Google Cloud Dataflow (Runner v2)
		Runners: []string{"dataflow", "DataflowRunner"},
		Lacks: []Lack{
			{ProcessingTimeTimersInBatch, filters + `, dataflowFilters: "TestTimers_ProcessingTime_Bounded", // Dataflow ignores processing time timers in batch.`, noProcessingTimers},
			{OrderedListState, filters + `, dataflowFilters: "TestOrderedListState", // Runner V2 doesn't support OrderedListState SDK feature.`, noMapState},
			{LiveMetrics, "Dataflow has no Beam job service: its counters are in the Dataflow API, which the launcher does not read while the job runs", noLiveMetrics},
		},
	},
	{
		Name:    "spark", // Spark's portable runner through its job server
		Runners: []string{"spark", "SparkRunner"},
		Lacks: []Lack{
			{SelfCheckpointing, filters + `, sparkFilters: "TestCheckpointing" // The spark runner does not support self-checkpointing`, "none: every source of this pipeline self-checkpoints, so it is refused"},
			{ProcessingTimeTimers, filters + `, sparkFilters: "TestTimers_ProcessingTime_Unbounded"`, noProcessingTimers},
			{BundleFinalization, filters + `, sparkFilters: "TestParDoBundleFinalizer.*"`, noFinalization},
			{MapState, filters + `, sparkFilters: "TestMapState" // Spark does not support map based state types.`, noMapState},
			{SetState, filters + `, sparkFilters: "TestSetState"`, noMapState},
			{OrderedListState, filters + `, sparkFilters: "TestOrderedListState"`, noMapState},
			{LiveMetrics, "Beam Java's job server, as Flink's (JobInvocation.getMetrics)", noLiveMetrics},
		},
	},
	{
		Name:    "direct", // the Go SDK's old in-process runner, superseded by prism
		Runners: []string{"direct", "DirectRunner"},
		Lacks: []Lack{
			{UserState, filters + `, directFilters: "TestValueState", "TestBagState" // The direct runner does not support user state.`, "none: dedup and revisions are stateful, so it is refused; use prism"},
			{EventTimeTimers, filters + `, directFilters: "TestTimers.*", // no timer support for the go direct runner.`, "none: refused; use prism"},
			{ProcessingTimeTimers, filters + `, directFilters: "TestTimers.*"`, noProcessingTimers},
			{SelfCheckpointing, filters + `, directFilters: "TestCheckpointing" // The direct runner does not support self-checkpointing`, "none: refused; use prism"},
			{BundleFinalization, filters + `, directFilters: "TestParDoBundleFinalizer.*"`, noFinalization},
			{MapState, filters + `, directFilters: "TestMapState"`, noMapState},
			{SetState, filters + `, directFilters: "TestSetState"`, noMapState},
			{OrderedListState, filters + `, directFilters: "TestOrderedListState"`, noMapState},
			{LiveMetrics, "the direct runner has no job service", noLiveMetrics},
		},
	},
}

// For returns the profile of a --runner value: prism's when IsPrism says so,
// the conservative universal profile for a runner the table does not name.
func For(runner string) Profile {
	p, _ := lookup(runner)
	return p
}

// Named reports whether the table names runner; For of any other is a guess.
func Named(runner string) bool {
	_, ok := lookup(runner)
	return ok
}

// Registered reports whether Beam's runner registry takes runner as spelled: prism's names or a
// profile's Runners exactly (beam.Run exits the process for any other; lookup ignores case).
func Registered(runner string) bool {
	return (runner != "" && IsPrism(runner)) ||
		slices.ContainsFunc(profiles, func(p Profile) bool { return slices.Contains(p.Runners, runner) })
}

// lookup finds runner's profile, ignoring case (no two profiles' runners differ only in case).
func lookup(runner string) (Profile, bool) {
	if IsPrism(runner) {
		return named("prism"), true
	}
	for _, p := range profiles {
		if slices.ContainsFunc(p.Runners, func(r string) bool { return strings.EqualFold(r, runner) }) {
			return p, true
		}
	}
	return named("universal"), false // the conservative profile of an unknown portable job server
}

// named returns the table's profile of that name (the table is a constant: it has it).
func named(name string) Profile {
	return profiles[slices.IndexFunc(profiles, func(p Profile) bool { return p.Name == name })]
}

// Refusal is the first use by a pipeline of what its runner lacks.
type Refusal struct {
	// Runner is the profile's name.
	Runner string
	Lack   Lack
	// Where names the transform (its unique name in the proto) that needs it.
	Where string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("the %s runner lacks %s, which %s needs (%s)", r.Runner, r.Lack.Feature, r.Where, r.Lack.Proof)
}

// IsPrism is the one answer to "is this prism?": --runner names prism (""
// is the default), in this process or as a job server at --endpoint. Every
// prism-only behaviour follows it; --runner=universal is never prism.
func IsPrism(runner string) bool {
	switch runner {
	case "", "prism", "PrismRunner":
		return true
	}
	return false
}
