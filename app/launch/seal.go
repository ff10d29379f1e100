package launch

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/io/sinks/sink"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
)

// sealer writes a folder-source run's resume points (sinks.ProgressStore's
// source_resume) once the outputs of every record before them are durable,
// so that a restart resuming there never skips a record whose audit row or
// window row a crash lost (SPEC §8: a sink write happens only once what it
// depends on is durable).
//
// The workers write checkpoints as each partition finishes a file
// (sinks.WriteProgress, in a keyed stage: a checkpoint in the sink means
// the runner has committed the bundle that read its records, with its
// `read` counter). A checkpoint says nothing about the outputs of those
// records. The sealer proves that from the runner's committed metrics, in
// this order:
//
//  1. candidate: read this run's checkpoints and the sink's FINAL horizon
//     and earliest open window, and choose per partition the last
//     checkpoint below the resume horizon (chooseResume);
//  2. confirm, later: every record read has its verdict (read = counted +
//     duplicates + conflicts + quarantined + too_late), and the sink's write
//     counters have stood still for the quiet period since the candidate
//     was read: the outputs of the checkpoints' records, emitted before
//     their verdicts were committed, have been written (a BigQuery row
//     counts when buffered, so its quiet period includes a flush interval);
//  3. seal the candidate.
//
// The windows the skipped records fall in are all below the horizon, so
// FINAL in the sink (or without rows, never earlier than the earliest open
// window), as at the candidate's read.
//
// A run seals at its end when it finished, or was stopped gracefully and
// the stop settled, with conservation holding; a following run also seals
// while it runs, whenever it is quiet (sealDue), so a crash re-reads from the
// last quiet moment rather than from the previous run's end. A run that
// crashes seals nothing more: the next one resumes from the last seal,
// re-reading more, never less.
//
// Only evidence the runner really gives counts (reading.proves): committed
// counters that saw records, all of them judged. A runner without live
// metrics (capability.LiveMetrics: Flink's job server, Dataflow, an
// unknown job server) gives none while its job runs, and its attempted
// counters are zero, which would look drained: such a run seals nothing
// while it runs nor after a graceful stop, only at the end of a job that
// finished (its final metrics are reported then). Where a run seals
// nothing it says why in one line, with what a restart will re-read
// (decline).
// sealPoll is how often a following run reads the runner's counters for
// sealDue.
const sealPoll = time.Second

type sealer struct {
	spec  sink.Spec
	run   string
	po    pipeline.Options
	quiet time.Duration
	every time.Duration // how often a following run reads a candidate
	// noLive is why the runner's counters prove nothing while the job
	// runs ("" when they can).
	noLive string
	// points are the resume points a restart would use now: those this run
	// resumed from, then those it sealed, by partition.
	points   map[string]model.Checkpoint
	declined bool

	store    sinks.ProgressStore
	pending  *sealCandidate
	lastRead time.Time // when the last candidate was read
	writes   quietWatch
}

// quietWatch follows the sink's write counters in the runner's committed
// metrics (for workers anywhere): when they last changed. The graceful stop
// and the sealer judge "settled" by it.
type quietWatch struct {
	written int64
	changed time.Time
}

// observe notes a reading taken at now and reports whether it shows every
// record read with its verdict (nothing in flight between the readers and
// dedup; a guess on attempted counters, good enough to time a stop), and
// whether it proves so (reading.proves, what a seal needs).
func (w *quietWatch) observe(now time.Time, r reading) (drained, proven bool) {
	if n := r.SinkAccepted + r.SinkStale + r.SinkAudit; n != w.written {
		w.written, w.changed = n, now
	}
	return r.Read == r.Verdicts(), r.proves()
}

// sealCandidate is a set of resume points read at a time, waiting for the
// proof that their records' outputs are durable.
type sealCandidate struct {
	at     time.Time
	points []model.Checkpoint
}

// newSealer returns the sealer of a run on runner that resumed from
// resumed (nil: from every partition's first file).
func newSealer(spec sink.Spec, run string, po pipeline.Options, quiet, every time.Duration, runner string, resumed []model.Checkpoint) *sealer {
	s := &sealer{spec: spec, run: run, po: po, quiet: quiet, every: every, noLive: noLiveProof(runner), points: map[string]model.Checkpoint{}}
	for _, c := range resumed {
		s.points[c.Partition] = c
	}
	return s
}

// noLiveProof says why runner's counters prove nothing while its job runs,
// "" when they can: the runner reports live committed metrics
// (capability.LiveMetrics; prism does).
func noLiveProof(runner string) string {
	if l, lacks := capability.For(runner).Lack(capability.LiveMetrics); lacks {
		return fmt.Sprintf("the %s runner gives no live metrics (%s)", runner, l.Proof)
	}
	return ""
}

// decline logs, once per run, why the run seals no (more) resume points
// and what a restart will therefore re-read.
func (s *sealer) decline(why string) {
	if s.declined {
		return
	}
	s.declined = true
	slog.Warn(fmt.Sprintf("restart: resume points not sealed: %s; %s", why, s.rereads()))
}

// rereads says what a restart would re-read now.
func (s *sealer) rereads() string {
	if len(s.points) == 0 {
		return "a restart re-reads every partition from its first file"
	}
	var at []string
	for _, p := range slices.Sorted(maps.Keys(s.points)) {
		c := s.points[p]
		at = append(at, fmt.Sprintf("%s after %s (line %d)", p, c.File, c.Line))
	}
	return fmt.Sprintf("a restart re-reads each partition from its last sealed point (%s), a partition without one from its first file", strings.Join(at, ", "))
}

// open opens the sink's progress tables on first use (a SQLite file is
// created by the job's first write); ok is false for a sink without them.
func (s *sealer) open(ctx context.Context) (bool, error) {
	if s.store != nil {
		return true, nil
	}
	store, ok, err := sinks.OpenProgress(ctx, s.spec)
	if err != nil || !ok {
		return false, err
	}
	s.store = store
	return true, nil
}

// candidate reads step 1: the resume points the sink's rows would allow
// now, from this run's checkpoints (nil when none moves forward).
func (s *sealer) candidate(ctx context.Context, now time.Time) (*sealCandidate, error) {
	if ok, err := s.open(ctx); err != nil || !ok {
		return nil, err
	}
	cps, err := s.store.RunCheckpoints(ctx, s.run)
	if err != nil || len(cps) == 0 {
		return nil, err
	}
	finalEnd, hasFinal, err := s.store.FinalHorizon(ctx)
	if err != nil {
		return nil, err
	}
	openStart, hasOpen, err := s.store.EarliestOpenWindow(ctx)
	if err != nil {
		return nil, err
	}
	horizon, ok := resumeHorizon(finalEnd, hasFinal, openStart, hasOpen, s.po)
	if !ok {
		return nil, nil
	}
	sealed, err := s.store.ResumePoints(ctx)
	if err != nil {
		return nil, err
	}
	points := chooseResume(cps, horizon, sealed)
	if len(points) == 0 {
		return nil, nil
	}
	return &sealCandidate{at: now, points: points}, nil
}

// sealDue is step 2's rule: every record read has its verdict, and the
// sink's write counters have not changed for quiet since the candidate was
// read.
func sealDue(candidateAt, changed, now time.Time, quiet time.Duration, drained bool) bool {
	return drained && now.Sub(later(changed, candidateAt)) >= quiet
}

// observe takes one reading of the runner's committed counters while the
// job runs: it seals a candidate that sealDue confirms on a reading that
// proves it, and reads a new one every s.every. On a runner without live
// metrics it seals nothing and says so once. Errors are logged: a seal that
// fails costs a longer restart, never a wrong one.
func (s *sealer) observe(ctx context.Context, now time.Time, r reading) {
	if s.noLive != "" {
		s.decline(s.noLive + " while the job runs")
		return
	}
	_, proven := s.writes.observe(now, r)
	if s.pending != nil && sealDue(s.pending.at, s.writes.changed, now, s.quiet, proven) {
		if err := s.seal(ctx, s.pending.points); err != nil {
			slog.Warn("sealing resume points", "sink", s.spec.String(), "err", err)
		}
		s.pending = nil
	}
	if s.pending == nil && now.Sub(s.lastRead) >= s.every {
		s.lastRead = now
		cand, err := s.candidate(ctx, now)
		if err != nil {
			slog.Warn("reading resume candidates", "sink", s.spec.String(), "err", err)
		}
		s.pending = cand
	}
}

// final seals at the end of a run whose outputs are all durable: it
// finished, or its graceful stop settled on the runner's committed
// counters, and conservation holds on committed counters. The caller says
// why not (unproven, "" when all holds); then nothing is sealed and
// decline says so. The job has ended, so nothing is written after the
// candidate is read.
func (s *sealer) final(ctx context.Context, unproven string) error {
	if unproven != "" {
		s.decline(unproven)
		return nil
	}
	cand, err := s.candidate(ctx, time.Now())
	if err != nil || cand == nil {
		return err
	}
	return s.seal(ctx, cand.points)
}

func (s *sealer) seal(ctx context.Context, points []model.Checkpoint) error {
	if err := s.store.SealResume(ctx, points); err != nil {
		return fmt.Errorf("sink %s: %w", s.spec, err)
	}
	if s.points == nil {
		s.points = map[string]model.Checkpoint{}
	}
	for _, c := range points {
		s.points[c.Partition] = c
		slog.Info("restart point sealed", "partition", c.Partition, "after", c.File, "max_valid_event_time", fmtEventTime(c.MaxValid))
	}
	// Checkpoints of earlier runs are never read again.
	if err := s.store.PruneCheckpoints(ctx, s.run); err != nil {
		return fmt.Errorf("sink %s: %w", s.spec, err)
	}
	return nil
}

func (s *sealer) close() {
	if s != nil && s.store != nil {
		s.store.Close()
		s.store = nil
	}
}
