package pubsub

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/io/rawlog"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

// subscriber is the part of the Pub/Sub subscription API the reader uses
// (the client's *apiv1.SubscriptionAdminClient). Synchronous Pull, not the
// streaming Subscriber.Receive: a splittable DoFn must return to the runner
// every few hundred milliseconds (to report its watermark and checkpoint),
// and must decide itself when a message is acknowledged. Receive owns both:
// it runs until its context ends, acknowledges from its own goroutines and
// keeps extending leases of messages it has handed out, so every call would
// tear down a stream and leave leased messages to expire. A Pull is one
// request whose messages the call archives, acknowledges and emits before it
// returns.
type subscriber interface {
	Pull(ctx context.Context, req *pb.PullRequest, opts ...gax.CallOption) (*pb.PullResponse, error)
	Acknowledge(ctx context.Context, req *pb.AcknowledgeRequest, opts ...gax.CallOption) error
	ModifyAckDeadline(ctx context.Context, req *pb.ModifyAckDeadlineRequest, opts ...gax.CallOption) error
}

// outcome says why a reader's call ended.
type outcome int

const (
	// outBudget: MaxPerCall records or the time budget used up; resume now.
	outBudget outcome = iota
	// outCaughtUp: the subscription had nothing for a whole pull.
	outCaughtUp
	// outStopped: RequestStop was seen.
	outStopped
	// outLost: a claim failed (the runner checkpointed from another
	// goroutine); the residual has the rest.
	outLost
	// outRetry: pulling or archiving failed; nothing was acknowledged, so
	// resume after a pause and try again.
	outRetry
)

func (o outcome) String() string {
	return [...]string{"budget", "caught-up", "stopped", "lost", "retry"}[o]
}

// ackChunk keeps an Acknowledge request well under Pub/Sub's 512 KB limit.
const ackChunk = 1000

// reader runs one ProcessElement call in plain Go: the DoFn only wires it
// to the tracker, the estimator and the emitter, so the order "archive and
// fsync, then acknowledge, then emit" is tested without a runner.
type reader struct {
	subscription string // projects/P/subscriptions/S
	archiveDir   string
	replayFrom   time.Time
	policy       watermark.Policy
	event        event.Config
	maxRecords   int
	pullBatch    int
	pullTimeout  time.Duration
	budget       time.Duration

	sub     subscriber
	archive archive
	now     func() time.Time
	stop    func() bool
	claim   func(restriction) bool
	emit    func(model.Record)
	log     *slog.Logger
	// afterAck, when set (tests only), runs after a batch is acknowledged
	// and before it is emitted; an error ends the call there, as a crash
	// between reading and committing would.
	afterAck func([]model.Record) error

	rest    restriction
	stamper *rawlog.Stamper
	emitted int
	// counts for the DoFn's counters
	pulled, acked, ackErrors, archiveErrors, blank, replayed int
}

func newReader(rest restriction, policy watermark.Policy, cfg event.Config) *reader {
	r := &reader{
		policy: policy, event: cfg,
		maxRecords: DefaultMaxPerCall, pullBatch: DefaultPullBatch,
		pullTimeout: DefaultPullTimeout, budget: callBudget,
		now: time.Now, stop: func() bool { return false },
		claim: func(restriction) bool { return true }, emit: func(model.Record) {},
		log:  slog.Default().With("source", "pubsub"),
		rest: rest,
	}
	r.stamper = rest.Stamper(policy, cfg)
	return r
}

// run replays the archive if that is pending, else pulls, until a budget is
// used up, the subscription runs dry or a stop is requested. It does not
// claim its final watermark state: the caller adds it and claims.
func (r *reader) run(ctx context.Context) (outcome, error) {
	start := r.now()
	r.emitted = 0
	if r.rest.Replay != replayDone {
		out, err := r.replay(start)
		if err != nil || r.rest.Replay != replayDone {
			return out, err
		}
	}
	for {
		if r.stop() {
			return outStopped, nil
		}
		if r.emitted >= r.maxRecords || r.now().Sub(start) >= r.budget {
			return outBudget, nil
		}
		out, more, err := r.pullOnce(ctx, min(r.pullBatch, r.maxRecords-r.emitted))
		if err != nil || !more {
			return out, err
		}
	}
}

// pullOnce pulls one batch and carries it through archive, acknowledgement
// and emission. more says the call may go on pulling.
func (r *reader) pullOnce(ctx context.Context, max int) (out outcome, more bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, r.pullTimeout)
	resp, err := r.sub.Pull(pctx, &pb.PullRequest{Subscription: r.subscription, MaxMessages: int32(max)})
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return outStopped, false, nil // the job is going away
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded):
		return outCaughtUp, false, nil // a pull that waited in vain
	case err != nil && permanent(err):
		return 0, false, fmt.Errorf("pubsub source %s: pull: %w", r.subscription, err)
	case err != nil:
		r.log.Warn("pubsub pull failed; retrying", "subscription", r.subscription, "err", err)
		return outRetry, false, nil
	}
	msgs := resp.GetReceivedMessages()
	if len(msgs) == 0 {
		return outCaughtUp, false, nil
	}
	r.pulled += len(msgs)
	now := r.now()

	// 1. Archive: write + fsync, in the order Pub/Sub handed them over,
	// which is this partition's arrival order.
	var lines [][]byte
	var ids, ackIDs []string
	for _, m := range msgs {
		ackIDs = append(ackIDs, m.GetAckId())
		line := archiveLine(m.GetMessage().GetData())
		if rawlog.Blank(line) {
			r.blank++ // SPEC §3: skipped and not read; acknowledged below
			continue
		}
		lines = append(lines, line)
		ids = append(ids, m.GetMessage().GetMessageId())
	}
	if len(lines) > 0 {
		if err := r.archive.Append(lines, ids, now); err != nil {
			r.archiveErrors++
			r.log.Error("pubsub archive append failed; the batch is not acknowledged and comes back",
				"subscription", r.subscription, "messages", len(msgs), "err", err)
			r.nack(ctx, ackIDs)
			return outRetry, false, nil
		}
	}

	// 2. Stamp and claim: the batch's records and the watermark state they
	// lead to. A failed claim means the runner took the rest of the
	// restriction; the batch goes back to Pub/Sub (it is archived, so a
	// replay would see it twice: dedup's business).
	recs := make([]model.Record, len(lines))
	for i, line := range lines {
		recs[i] = r.record(line, rawlog.IDPosition(ids[i]), now)
	}
	if !r.claim(r.rest) {
		r.nack(ctx, ackIDs)
		return outLost, false, nil
	}

	// 3. Acknowledge: only now can the messages no longer be lost. A failed
	// acknowledgement is not an error: Pub/Sub delivers those messages
	// again, they are archived again, and dedup drops the copies.
	r.ack(ctx, ackIDs)
	if r.afterAck != nil {
		if err := r.afterAck(recs); err != nil {
			return 0, false, err
		}
	}

	// 4. Emit. The runner commits these with the bundle; if it never does
	// (a crash), the archive still has them for the restart's replay.
	for _, rec := range recs {
		r.emit(rec)
	}
	r.emitted += len(recs)
	return outBudget, true, nil
}

// record builds and stamps the record of an archived line.
func (r *reader) record(line []byte, position string, now time.Time) model.Record {
	rec := model.Record{Partition: Partition, Position: position, Line: line, ReadAt: now.UnixMilli()}
	if len(line) > r.event.MaxLine {
		// As rawlog does for a file: the record carries a prefix only.
		rec.Line, rec.Oversized = line[:min(len(line), rawlog.PrefixLimit)], true
	}
	r.rest.Stamp(r.stamper, &rec, r.policy.OutOfOrderBound)
	return rec
}

func (r *reader) ack(ctx context.Context, ackIDs []string) {
	for len(ackIDs) > 0 {
		n := min(len(ackIDs), ackChunk)
		err := r.sub.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: r.subscription, AckIds: ackIDs[:n]})
		if err != nil {
			r.ackErrors += n
			r.log.Warn("pubsub acknowledge failed; the messages come back and are deduplicated",
				"subscription", r.subscription, "messages", n, "err", err)
		} else {
			r.acked += n
		}
		ackIDs = ackIDs[n:]
	}
}

// nack hands messages back for prompt redelivery (deadline 0). It is best
// effort: if it fails, the ack deadline expires anyway.
func (r *reader) nack(ctx context.Context, ackIDs []string) {
	for len(ackIDs) > 0 {
		n := min(len(ackIDs), ackChunk)
		if err := r.sub.ModifyAckDeadline(ctx, &pb.ModifyAckDeadlineRequest{
			Subscription: r.subscription, AckIds: ackIDs[:n], AckDeadlineSeconds: 0,
		}); err != nil {
			r.log.Warn("pubsub nack failed; the messages come back after their ack deadline",
				"subscription", r.subscription, "messages", n, "err", err)
		}
		ackIDs = ackIDs[n:]
	}
}

// permanent reports errors that retrying cannot fix: the job should fail
// with them rather than spin.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument:
		return true
	}
	return false
}

// replay reads the archive, when the restriction says so, before the first
// pull: the acknowledged messages that a previous run read but may never
// have committed downstream are there, and only there.
func (r *reader) replay(start time.Time) (outcome, error) {
	if r.rest.Replay == replayPending {
		// Seal the file this process may still be writing (a job restarted
		// in the same process shares the writer), so that every file listed
		// now is complete and this run's own lines go to later files.
		if err := r.archive.Seal(); err != nil {
			return 0, err
		}
		files, err := archiveFiles(r.archiveDir, r.replayFrom)
		if err != nil {
			return 0, err
		}
		r.rest.Replay, r.rest.ReplayUntil = replayDone, ""
		if len(files) > 0 {
			r.rest.Replay, r.rest.ReplayUntil = replayRunning, files[len(files)-1]
			r.log.Info("pubsub source: replaying the archive before pulling",
				"archive", r.archiveDir, "files", len(files), "first", files[0], "last", r.rest.ReplayUntil)
		}
		if !r.claim(r.rest) {
			return outLost, nil
		}
	}
	for r.rest.Replay == replayRunning {
		if r.stop() {
			return outStopped, nil
		}
		if r.rest.ReplayFile == "" {
			next, err := r.nextReplayFile()
			if err != nil {
				return 0, err
			}
			if next == "" {
				r.rest.Replay, r.rest.ReplayUntil, r.rest.ReplayAfter = replayDone, "", ""
				r.log.Info("pubsub source: archive replayed; pulling", "records", r.replayed)
				if !r.claim(r.rest) {
					return outLost, nil
				}
				return outBudget, nil
			}
			r.rest.ReplayFile = next
			r.rest.Offset, r.rest.Line, r.rest.IdsOffset, r.rest.IdsLine = 0, 0, 0, 0
		}
		out, done, err := r.replayFile(start)
		if err != nil || !done {
			return out, err
		}
		r.rest.ReplayAfter, r.rest.ReplayFile = r.rest.ReplayFile, ""
	}
	return outBudget, nil
}

// nextReplayFile is the first archive file after ReplayAfter, up to
// ReplayUntil, or "".
func (r *reader) nextReplayFile() (string, error) {
	files, err := archiveFiles(r.archiveDir, r.replayFrom)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if f > r.rest.ReplayAfter && f <= r.rest.ReplayUntil {
			return f, nil
		}
	}
	return "", nil
}

// replayFile reads the current replay file from the restriction's marks,
// with its id sidecar in lockstep (archive line N has the sidecar's line N).
func (r *reader) replayFile(start time.Time) (out outcome, done bool, err error) {
	pdir := filepath.Join(r.archiveDir, Partition)
	name := r.rest.ReplayFile
	f, err := os.Open(filepath.Join(pdir, name))
	if errors.Is(err, fs.ErrNotExist) {
		r.log.Error("pubsub archive file disappeared during the replay; moving on", "file", name)
		return 0, true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("pubsub archive replay: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(r.rest.Offset, io.SeekStart); err != nil {
		return 0, false, fmt.Errorf("pubsub archive replay: seek %s: %w", name, err)
	}
	ids := openSidecar(filepath.Join(pdir, idsName(name)), r.rest.IdsOffset)
	defer ids.close()

	lr := rawlog.NewReaderAt(f, r.event.MaxLine, rawlog.Mark{Offset: r.rest.Offset, Line: r.rest.Line})
	for {
		if r.stop() {
			return outStopped, false, nil
		}
		if r.emitted >= r.maxRecords || r.now().Sub(start) >= r.budget {
			return outBudget, false, nil
		}
		l, err := lr.Next()
		if errors.Is(err, io.EOF) {
			if lr.Pending() > 0 {
				r.log.Warn("pubsub archive file ends in a torn line (a crash while writing; it was never acknowledged); not read",
					"position", rawlog.Position(Partition, name, lr.Mark().Line+1))
			}
			return 0, true, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("pubsub archive replay: %s: %w", name, err)
		}
		// Archive line N has its message id on the sidecar's line N; a line
		// the sidecar lacks (a crash between the two writes: it was never
		// acknowledged) falls back to its file position.
		pos := rawlog.Position(Partition, name, l.No)
		for r.rest.IdsLine < l.No {
			id, n, ok := ids.next()
			if !ok {
				break
			}
			r.rest.IdsLine++
			r.rest.IdsOffset += n
			if r.rest.IdsLine == l.No && id != "" {
				pos = rawlog.IDPosition(id)
			}
		}
		now := r.now()
		var rec model.Record
		if l.Oversized {
			// rawlog kept a prefix only; record() must not re-cut it.
			rec = model.Record{Partition: Partition, Position: pos, Line: clone(l.Bytes), Oversized: true, ReadAt: now.UnixMilli()}
			r.rest.Stamp(r.stamper, &rec, r.policy.OutOfOrderBound)
		} else {
			rec = r.record(clone(l.Bytes), pos, now)
		}
		r.rest.Offset, r.rest.Line = l.End, l.No
		if !r.claim(r.rest) {
			return outLost, false, nil
		}
		r.emit(rec)
		r.emitted++
		r.replayed++
	}
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// sidecar reads an id sidecar line by line. A missing sidecar has no lines.
type sidecar struct {
	f  *os.File
	br *bufio.Reader
}

func openSidecar(path string, offset int64) *sidecar {
	f, err := os.Open(path)
	if err != nil {
		return &sidecar{}
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		f.Close()
		return &sidecar{}
	}
	return &sidecar{f: f, br: bufio.NewReader(f)}
}

// next returns the next complete line's id and its length in bytes; ok is
// false at the end or at a torn last line.
func (s *sidecar) next() (id string, n int64, ok bool) {
	if s.br == nil {
		return "", 0, false
	}
	line, err := s.br.ReadString('\n')
	if err != nil {
		s.br = nil // EOF or a torn line: nothing further is trusted
		return "", 0, false
	}
	return strings.TrimSuffix(line, "\n"), int64(len(line)), true
}

func (s *sidecar) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// watermarkState adds the watermark state at processing time now to the
// restriction: idleness and the reported watermark, which never decreases.
// It logs a change of idleness and reports whether the partition just went
// idle.
func (r *reader) watermarkState(now int64) bool {
	p := r.stamper.Partition()
	wentIdle, cameBack := r.rest.Update(p, now)
	switch {
	case wentIdle:
		r.log.Info("pubsub source idle: its watermark now advances with processing time",
			"idle_timeout", r.policy.IdleTimeout, "last_record", fmtMs(r.rest.LastActive),
			"reported_watermark", fmtMs(r.rest.Reported))
	case cameBack:
		r.log.Info("pubsub source active again: records older than its watermark are late or too late",
			"event_watermark", fmtMs(p.Watermark()), "reported_watermark", fmtMs(r.rest.Reported))
	}
	return wentIdle
}
