package pubsub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/revenue-stream/hourly/internal/faults"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/internal/flow"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/sources/rawlog"
	"github.com/revenue-stream/hourly/watermark"
)

// subscriber is the part of the subscription API the reader uses (the
// client's *apiv1.SubscriptionAdminClient): synchronous Pull, see the
// package doc.
type subscriber interface {
	Pull(ctx context.Context, req *pb.PullRequest, opts ...gax.CallOption) (*pb.PullResponse, error)
	Acknowledge(ctx context.Context, req *pb.AcknowledgeRequest, opts ...gax.CallOption) error
	ModifyAckDeadline(ctx context.Context, req *pb.ModifyAckDeadlineRequest, opts ...gax.CallOption) error
}

// ackChunk keeps an Acknowledge request well under Pub/Sub's 512 KB limit.
const ackChunk = 1000

// counts are a call's figures for the DoFn's counters, added to by the
// pullers' goroutines.
type counts struct {
	pulled, acked, ackErrors, blank, replayed, objects, archiveBytes atomic.Int64
	archiveRetries, extended, heldPeak                               atomic.Int64
}

// reader runs one ProcessElement call in plain Go, so "archive, then
// acknowledge, then emit" is tested without a runner.
type reader struct {
	subscription string  // projects/P/subscriptions/S
	o            Options // with defaults
	store        *store
	token        string        // this attempt's object-name token
	budget       time.Duration // callBudget
	// stalled sets the key's stall gauge (ms held without emitting).
	stalled func(ms int64)
	watch   *stallWatch

	sub   subscriber
	now   func() time.Time
	stop  func() bool
	claim func(restriction) bool
	emit  func(model.Record)
	log   *slog.Logger
	// fault is a commit boundary (internal/faults).
	fault func(point string)

	rest    restriction
	stamper *rawlog.Stamper
	emitted int
	c       counts
}

func newReader(rest restriction, o Options) *reader {
	o = o.withDefaults("")
	return &reader{
		o: o, budget: callBudget, stalled: func(int64) {}, token: flow.Token(4),
		now: time.Now, stop: func() bool { return false },
		claim: func(restriction) bool { return true }, emit: func(model.Record) {},
		log:  slog.Default().With("source", "pubsub"),
		rest: rest,
		fault: func(point string) {
			if faults.Fire(point) {
				faults.Crash(point)
			}
		},
		stamper: rawlog.ResumeStamper(o.Watermark, o.Event, rest.State),
	}
}

// run re-emits what the archive holds after the restriction's position,
// then pulls, until a budget is used up, the subscription runs dry or a stop
// is requested; the caller claims the final watermark state.
func (r *reader) run(ctx context.Context) (sdfread.Outcome, error) {
	start := r.now()
	r.emitted = 0
	r.watch = newStallWatch(r.o.StallAfter)
	defer r.watchStalls()()
	if !r.rest.Started { // a fresh key begins before the whole archive: what a dead run acknowledged is there and only there
		r.rest.Started = true
		if !r.claim(r.rest) {
			return sdfread.Lost, nil
		}
	}
	out, done, err := r.catchUp(ctx, start)
	if err != nil || !done {
		return out, err
	}
	if r.stop() {
		return sdfread.Stopped, nil
	}
	return r.pull(ctx, start)
}

// learn raises Seq and Hour over names, so new objects sort after them.
func (r *reader) learn(names []string) {
	for _, n := range names {
		if h, seq, ok := parseObjectName(n); ok {
			r.rest.Seq, r.rest.Hour = max(r.rest.Seq, seq), max(r.rest.Hour, h)
		}
	}
}

// catchUp re-emits the objects after the restriction's position. done says
// the archive is caught up and the call may pull. Every call lists: only
// the archive knows what another worker's uncommitted attempt archived and
// acknowledged after the position, so no process-wide state may skip it.
// A call lists a page: when it came back full, the call ends after it (the
// next lists after its new position), and never pulls, whose new objects
// must sort after every archived one.
func (r *reader) catchUp(ctx context.Context, start time.Time) (out sdfread.Outcome, done bool, err error) {
	names, more, err := r.store.list(ctx, r.rest.Emitted)
	if err != nil {
		return 0, false, err
	}
	r.learn(names)
	if len(names) > 0 {
		r.log.Info("pubsub source: re-emitting from the archive before pulling",
			"archive", r.store.dir, "after", r.rest.Emitted, "objects", len(names), "first", names[0], "last", names[len(names)-1])
	}
	for i, name := range names {
		r.rest.Pending.Archive = archiveBacklog(len(names)-i, r.o.PullBatch)
		if r.rest.Object != "" && r.rest.Object != name { // deleted by an operator
			r.log.Error("pubsub archive object disappeared during a re-emit; moving on", "object", r.rest.Object)
			r.rest.Object, r.rest.Offset, r.rest.Line = "", 0, 0
		}
		r.rest.Object = name
		r.watch.hold(r.now(), replaySeq, onHand{waiting: waitArchiveRead, object: name})
		out, done, err := r.replayObject(ctx, start)
		if err != nil || !done {
			return out, false, err
		}
		r.rest.Emitted, r.rest.Object, r.rest.Offset, r.rest.Line = name, "", 0, 0
		if !r.claim(r.rest) {
			return sdfread.Lost, false, nil
		}
	}
	if more { // Pending.Archive stays above 0: the key holds records
		return sdfread.Budget, false, nil
	}
	r.rest.Pending.Archive = 0
	r.watch.done(replaySeq)
	return sdfread.Budget, true, nil
}

// replayObject emits the rest of the object r.rest.Object from its mark,
// claiming each record's position.
func (r *reader) replayObject(ctx context.Context, start time.Time) (out sdfread.Outcome, done bool, err error) {
	name := r.rest.Object
	rc, side, err := r.store.read(ctx, name, r.rest.Offset)
	if err != nil {
		return 0, false, err
	}
	defer rc.Close()
	r.watch.waitOn(replaySeq, waitEmit)
	lr := rawlog.NewReaderAt(rc, r.o.Event.MaxLine, rawlog.Mark{Offset: r.rest.Offset, Line: r.rest.Line})
	for {
		if out, end := r.ended(start); end {
			return out, false, nil
		}
		l, err := lr.Next()
		if errors.Is(err, io.EOF) {
			if lr.Pending() > 0 {
				r.log.Warn("pubsub archive object ends in a torn line (a crash while writing; it was never acknowledged); not read",
					"position", rawlog.Position(r.store.part, name, lr.Mark().Line+1))
			}
			return 0, true, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("pubsub archive re-emit: %s: %w", name, err)
		}
		// Archive line N's message id is on sidecar line N, else the file position.
		pos, entry := rawlog.Position(r.store.part, name, l.No), rawlog.SidecarEntry{}
		if l.No <= len(side) && side[l.No-1].ID != "" {
			entry = side[l.No-1]
			pos = rawlog.IDPosition(entry.ID)
		}
		rec := l.Record(r.store.part, pos, files.Join(r.store.dir, name), r.now().UnixMilli())
		r.stamp(&rec, entry.Backlog)
		r.rest.Offset, r.rest.Line = l.End, l.No
		if !r.claim(r.rest) {
			return sdfread.Lost, false, nil
		}
		r.emit(rec)
		r.watch.emitted()
		r.emitted++
		r.c.replayed.Add(1)
	}
}

// ended says whether the call begun at start must end before its next record, and why.
func (r *reader) ended(start time.Time) (sdfread.Outcome, bool) {
	return sdfread.Ended(r.stop(), r.emitted, r.o.MaxPerCall, r.now().Sub(start), r.budget)
}

// watchStalls checks the call for a stall every tick until stop is called
// (before the call returns: the gauge belongs to its bundle). A stall is
// logged once per episode; the gauge follows it.
func (r *reader) watchStalls() (stop func()) {
	w := r.watch
	if w.after <= 0 {
		return func() {}
	}
	tick := max(min(w.after/4, time.Second), 10*time.Millisecond)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(tick)
		defer t.Stop()
		shown := false // the gauge is set only during and at the end of a stall
		gauge := func(ms int64) {
			if ms > 0 || shown {
				r.stalled(ms)
				shown = ms > 0
			}
		}
		for {
			select {
			case <-quit:
				gauge(0)
				return
			case <-t.C:
			}
			s := w.check(r.now())
			if s.report {
				r.log.Warn("pubsub source stalled: it holds messages and has emitted none",
					"reader_key", r.store.part, "waiting_on", s.oldest.waiting, "object", s.oldest.object,
					"messages", s.oldest.messages, "for", s.stalled.Round(time.Millisecond), "limit", "--pubsub-stall-after="+w.after.String())
			}
			gauge(s.stalled.Milliseconds())
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// stamp stamps rec under its batch's backlog hold and folds it into the
// watermark state; an oversized line keeps its prefix only, as in rawlog.
func (r *reader) stamp(rec *model.Record, backlog bool) {
	if len(rec.Line) > r.o.Event.MaxLine {
		rec.Line, rec.Oversized = rec.Line[:min(len(rec.Line), rawlog.PrefixLimit)], true
	}
	r.stamper.Partition().Backlog(backlog)
	r.stamper.StampRecord(rec)
	r.rest.State = r.stamper.Partition().State()
}

// permanent reports errors that retrying cannot fix.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.NotFound, codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument:
		return true
	}
	return false
}

// endCall adds the watermark state at now to the restriction after a call
// that ended with out, logs a change of idleness and reports whether the
// partition just went idle. Failed pulls count as activity: an unreachable
// Pub/Sub says nothing about the producers and must not close the windows
// its backlog will fill. So do archive objects still to re-emit: a key
// restored after an outage longer than the idle timeout holds records, and
// a call that ran out of budget before re-emitting them must not hand the
// runner a watermark past them. And a call that emitted records was active
// to its end, however long they waited in it after their pull (a slow
// archive write, a blocked emit) while Pub/Sub kept the rest.
func (r *reader) endCall(out sdfread.Outcome, now int64) bool {
	if out == sdfread.Retry || r.rest.Pending.Archive > 0 || r.emitted > 0 {
		r.stamper.Partition().Touch(now)
	}
	var rep watermark.Report
	r.rest.State, rep = sdfread.Report(r.log, "pubsub source", r.stamper.Partition(), now, model.NoWatermark, false, r.o.Watermark.IdleTimeout)
	return rep.WentIdle
}
