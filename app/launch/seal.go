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
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// sealPoll is how often a following run reads the runner's counters.
const sealPoll = time.Second

// sealer writes a folder-source run's resume points once the outputs of every record before them
// are durable, so a restart never skips a record whose row a crash lost (SPEC §8). A checkpoint
// proves only that the runner committed the bundle that read its records. So the sealer (1) reads
// a candidate (chooseResume), (2) waits until committed counters show every record judged and the
// sink's writes stood still for the quiet period (reading.proves), (3) seals it: whenever a
// following run is quiet, and at the end of a finished or settled run.
type sealer struct {
	spec  sink.Spec
	run   string
	po    pipeline.Options
	quiet time.Duration
	every time.Duration // how often a following run reads a candidate
	// noLive: why the counters prove nothing while the job runs ("": they do).
	noLive string
	// points are the resume points a restart would use now, by partition.
	points   map[string]model.Checkpoint
	declined bool

	store    sink.ProgressStore
	pending  *sealCandidate
	lastRead time.Time // when the last candidate was read
	writes   quietWatch
}

// quietWatch notes when the sink's write counters last changed: "settled" for the stop and the seal.
type quietWatch struct {
	written int64
	changed time.Time
}

// observe notes a reading taken at now: drained, every record read judged (a guess on attempted
// counters, enough to time a stop); proven, reading.proves (what a seal needs).
func (w *quietWatch) observe(now time.Time, r reading) (drained, proven bool) {
	if n := r.SinkAccepted + r.SinkStale + r.SinkAudit; n != w.written {
		w.written, w.changed = n, now
	}
	return r.Conserved(), r.proves()
}

// sealCandidate is resume points read at a time, awaiting step 2's proof.
type sealCandidate struct {
	at     time.Time
	points []model.Checkpoint
}

// newSealer returns the sealer of a run on runner that resumed from resumed.
func newSealer(spec sink.Spec, run string, po pipeline.Options, quiet, every time.Duration, runner string, resumed []model.Checkpoint) *sealer {
	s := &sealer{spec: spec, run: run, po: po, quiet: quiet, every: every, noLive: noLiveProof(runner), points: map[string]model.Checkpoint{}}
	for _, c := range resumed {
		s.points[c.Partition] = c
	}
	return s
}

// noLiveProof says why runner's counters prove nothing while its job runs ("": they do).
func noLiveProof(runner string) string {
	if l, lacks := capability.For(runner).Lack(capability.LiveMetrics); lacks {
		return fmt.Sprintf("the %s runner gives no live metrics (%s)", runner, l.Proof)
	}
	return ""
}

// decline logs, once, why the run seals no (more) resume points and what a restart re-reads.
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

// candidate is step 1: the resume points the sink's rows allow now (nil: none moves forward). The
// sink's progress tables are opened on first use (none: no candidate).
func (s *sealer) candidate(ctx context.Context, now time.Time) (*sealCandidate, error) {
	if s.store == nil {
		store, ok, err := sink.OpenProgress(ctx, s.spec)
		if err != nil || !ok {
			return nil, err
		}
		s.store = store
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

// sealDue is step 2: every record judged, and no write for quiet since the candidate was read.
func sealDue(candidateAt, changed, now time.Time, quiet time.Duration, drained bool) bool {
	return drained && now.Sub(later(changed, candidateAt)) >= quiet
}

// observe takes one reading while the job runs: it seals a due candidate and reads a new one every
// s.every. Errors are logged: a failed seal costs a longer restart, never a wrong one.
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

// final seals at the end of a run unless unproven (outcome.unproven) says why not.
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

// resumeHorizon is the event time before which a restart need not re-read anything (SPEC §8). A
// skipped record must change nothing: its window is FINAL (it starts before openStart, the earliest
// window not FINAL), and dedup has forgotten its id (FINAL rows prove the watermark passed
// finalEnd + lateness; an id goes once the watermark is retention past it; the bound covers the
// lag of the last files' watermark). ok is false without a FINAL row: then everything is read.
func resumeHorizon(finalEnd int64, hasFinal bool, openStart int64, hasOpen bool, po pipeline.Options) (int64, bool) {
	if !hasFinal {
		return 0, false
	}
	po = po.WithDefaults()
	h := finalEnd + po.Triggers.AllowedLateness.Milliseconds() -
		po.DedupRetention.Milliseconds() - po.Watermark.OutOfOrderBound.Milliseconds()
	if hasOpen {
		h = min(h, openStart)
	}
	return h, true
}

// chooseResume picks, per partition, the last checkpoint (sorted by partition, then file) whose
// largest valid event time lies below horizon, if past its sealed point: they only move forward.
// A restart counts every file below its point as read, so the point ends a prefix of the
// partition's files all below horizon: a file read after a later-sorting one (it appeared out of
// lexical order) with events past horizon stops the partition's point before it.
func chooseResume(checkpoints []model.Checkpoint, horizon int64, sealed []model.Checkpoint) []model.Checkpoint {
	at := map[string]string{}
	for _, c := range sealed {
		at[c.Partition] = c.File
	}
	var out []model.Checkpoint
	past := map[string]bool{} // partitions with a file past horizon so far
	for i, c := range checkpoints {
		if f, ok := at[c.Partition]; ok && c.File <= f {
			continue
		}
		if past[c.Partition] || c.MaxValid >= horizon {
			past[c.Partition] = true
			continue
		}
		if n := len(out); n > 0 && out[n-1].Partition == c.Partition {
			out[n-1] = checkpoints[i] // a later file of the same partition
			continue
		}
		out = append(out, c)
	}
	return out
}

// seedBound is the earliest window whose sink row the revision step needs (sink.Published). A
// partition resumed after c restarts its watermark at c.MaxValid - bound, so a window ending by
// min(MaxValid) - bound - lateness is closed (SPEC §4); windows not FINAL are kept. A partition
// read from its first file, or resumed without a watermark, needs every row (the zero bound).
func seedBound(resume []model.Checkpoint, partitions []string, openStart int64, hasOpen bool, po pipeline.Options) sink.SeedBound {
	if len(partitions) == 0 {
		return sink.SeedBound{}
	}
	low, resumed := int64(0), map[string]bool{}
	for i, c := range resume {
		if c.MaxValid == model.NoWatermark {
			return sink.SeedBound{}
		}
		if i == 0 || c.MaxValid < low {
			low = c.MaxValid
		}
		resumed[c.Partition] = true
	}
	for _, p := range partitions {
		if !resumed[p] {
			return sink.SeedBound{}
		}
	}
	from := po.Triggers.WindowStart(low - po.Watermark.OutOfOrderBound.Milliseconds() - po.Triggers.AllowedLateness.Milliseconds())
	if hasOpen {
		from = min(from, po.Triggers.WindowStart(openStart))
	}
	return sink.SeedBound{Bounded: true, StartFrom: from}
}

// resumePoints reads where a folder source resumes each partition (nil: everything), from the
// points earlier runs sealed, and the windows whose rows the revision step needs (seedBound).
func resumePoints(ctx context.Context, spec sink.Spec, dir string, po pipeline.Options) ([]model.Checkpoint, sink.SeedBound, error) {
	none := sink.SeedBound{}
	store, ok, err := sink.OpenProgress(ctx, spec)
	if err != nil || !ok {
		return nil, none, err
	}
	defer store.Close()
	sealed, err := store.ResumePoints(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("sink %s: %w", spec, err)
	}
	if len(sealed) == 0 {
		return nil, none, nil
	}
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		return nil, none, fmt.Errorf("--source=%s: %w", dir, err)
	}
	var resume []model.Checkpoint
	for _, c := range sealed {
		if slices.Contains(parts, c.Partition) { // a partition gone from the folder is not read
			resume = append(resume, c)
			slog.Info("restart: resuming partition after its sealed checkpoint", "partition", c.Partition, "after", c.File,
				"line", c.Line, "max_valid_event_time", fmtEventTime(c.MaxValid), "sealed_by", c.Run)
		}
	}
	if len(resume) == 0 {
		return nil, none, nil
	}
	openStart, hasOpen, err := store.EarliestOpenWindow(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("sink %s: %w", spec, err)
	}
	bound := seedBound(resume, parts, openStart, hasOpen, po)
	slog.Info("restart: re-reading only what dedup and the open windows need",
		"partitions_resumed", len(resume), "partitions", len(parts), "sink_rows_loaded_for", bound.String())
	return resume, bound, nil
}

func fmtEventTime(ms int64) string {
	if ms == model.NoWatermark {
		return "none"
	}
	return model.FormatTime(ms)
}
