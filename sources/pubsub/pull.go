package pubsub

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/revenue-stream/hourly/internal/faults"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// batch is one Pull's messages on their way: archived as one object, then
// acknowledged, then emitted by the call's goroutine in sequence order.
type batch struct {
	seq    int64
	hour   string
	name   string // "": every payload was blank, nothing to archive
	lines  [][]byte
	side   []rawlog.SidecarEntry
	ackIDs []string
	pulled time.Time
	err    error // not archived within the limit: the call fails
}

// held bounds the messages pulled but not yet acknowledged.
type held struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n, max int
	peak   int
	closed bool
}

func newHeld(max int) *held {
	h := &held{max: max}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// acquire waits for room and reserves up to want messages; 0 once closed.
func (h *held) acquire(want int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for !h.closed && h.n >= h.max {
		h.cond.Wait()
	}
	if h.closed {
		return 0
	}
	got := min(want, h.max-h.n)
	h.n += got
	h.peak = max(h.peak, h.n)
	return got
}

func (h *held) release(n int) {
	h.mu.Lock()
	h.n -= n
	h.mu.Unlock()
	h.cond.Broadcast()
}

func (h *held) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cond.Broadcast()
}

// pulling is the shared state of one call's pullers.
type pulling struct {
	held     *held
	results  chan *batch
	stopping atomic.Bool
	caughtUp atomic.Bool
	retry    atomic.Bool

	cancelPulls context.CancelFunc

	mu    sync.Mutex
	seq   int64
	hour  string
	fatal error

	// waitedMs sums publish-to-pull waits over the timed messages.
	waitedMs, timed atomic.Int64
}

func (p *pulling) fail(err error) {
	p.mu.Lock()
	if p.fatal == nil {
		p.fatal = err
	}
	p.mu.Unlock()
	p.stopAll()
}

// stopAll stops the pullers and cancels waiting pulls (a failure, or the
// restriction was lost).
func (p *pulling) stopAll() {
	p.finish()
	p.cancelPulls()
}

// finish stops new pulls; pulls in flight carry their messages through.
func (p *pulling) finish() {
	p.stopping.Store(true)
	p.held.close()
}

func (p *pulling) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fatal
}

// pull runs the pull streams, each pulling, archiving and acknowledging,
// while this goroutine emits the batches in sequence order and claims the
// position after each, until the budget, an empty subscription, a stop or
// an archive failing past its limit.
func (r *reader) pull(ctx context.Context, start time.Time) (sdfread.Outcome, error) {
	pullStart := r.now()
	p := &pulling{
		held: newHeld(max(r.o.MaxHeld, 1)), results: make(chan *batch, 2*r.o.Pullers),
		seq: r.rest.Seq, hour: r.rest.Hour,
	}
	// Only pulls are cancelled (on failure or a lost restriction): a pulled
	// batch is always archived and acknowledged.
	pctx, cancelPulls := context.WithCancel(ctx)
	defer cancelPulls()
	p.cancelPulls = cancelPulls
	var wg sync.WaitGroup
	for range r.o.Pullers {
		wg.Go(func() { r.puller(ctx, pctx, p) })
	}
	extDone := make(chan struct{})
	go r.extendHeld(ctx, p, extDone)
	go func() {
		wg.Wait()
		close(extDone)
		close(p.results)
	}()

	pending := map[int64]*batch{}
	expect := r.rest.Seq + 1
	lost := false
	for b := range p.results {
		pending[b.seq] = b
		for nb, ok := pending[expect]; ok; nb, ok = pending[expect] {
			delete(pending, expect)
			expect++
			emitted := !lost && p.err() == nil && nb.err == nil && r.emitBatch(nb)
			r.watch.done(nb.seq)
			switch {
			case emitted:
				r.fault(faults.PubSubAfterEmit)
			case lost || p.err() != nil:
				// archived (or not) and acknowledged: the next attempt re-emits it
			case nb.err != nil:
				p.fail(nb.err)
			default: // the claim failed
				lost = true
				p.stopAll()
			}
		}
		if _, end := r.ended(start); end {
			p.finish()
		}
	}
	r.c.heldPeak.Store(int64(p.held.peak))

	switch {
	case p.err() != nil:
		return 0, p.err()
	case lost:
		return sdfread.Lost, nil
	}
	switch pulled := r.c.pulled.Load(); {
	case p.caughtUp.Load():
		r.rest.Pending.Subscription = 0 // a pull found nothing waiting
	case pulled > 0:
		r.rest.Pending.Subscription = subscriptionBacklog(pulled, r.now().Sub(pullStart),
			time.Duration(p.waitedMs.Load())*time.Millisecond, p.timed.Load())
	}
	switch out, end := r.ended(start); {
	case out == sdfread.Stopped && end:
		return sdfread.Stopped, nil
	case p.retry.Load() && r.emitted == 0:
		return sdfread.Retry, nil
	case p.caughtUp.Load() && !end:
		return sdfread.CaughtUp, nil
	}
	return sdfread.Budget, nil
}

// emitBatch stamps, claims and emits an archived batch; false: the claim
// failed.
func (r *reader) emitBatch(b *batch) bool {
	saved := r.rest
	r.rest.Seq, r.rest.Hour = max(r.rest.Seq, b.seq), max(r.rest.Hour, b.hour)
	if b.name != "" {
		r.rest.Emitted = b.name
	}
	recs := make([]model.Record, len(b.lines))
	path, offset := files.Join(r.store.dir, b.name), int64(0)
	for i, line := range b.lines {
		recs[i] = model.Record{Partition: r.store.part, Position: rawlog.IDPosition(b.side[i].ID), Line: line,
			ReadAt: b.pulled.UnixMilli(), Ref: model.LineRef{Path: path, Offset: offset, Length: len(line)}}
		offset += int64(len(line)) + 1
		r.stamp(&recs[i], b.side[i].Backlog)
	}
	if !r.claim(r.rest) {
		r.rest = saved
		return false
	}
	for _, rec := range recs {
		r.emit(rec)
		r.watch.emitted()
	}
	r.emitted += len(recs)
	return true
}

// puller is one pull stream: pull, archive, acknowledge, hand over.
func (r *reader) puller(ctx, pctx context.Context, p *pulling) {
	for !p.stopping.Load() {
		n := p.held.acquire(r.o.PullBatch)
		if n == 0 {
			return
		}
		// No client retries: their backoff would end in this timeout and
		// turn an outage (Unavailable) into what looks like an empty pull.
		tctx, cancel := context.WithTimeout(pctx, r.o.PullTimeout)
		resp, err := r.sub.Pull(tctx, &pb.PullRequest{Subscription: r.subscription, MaxMessages: int32(n)}, gax.WithRetry(nil))
		timedOut := tctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded)
		cancel()
		msgs := resp.GetReceivedMessages()
		if err != nil || len(msgs) == 0 {
			p.held.release(n)
			switch {
			case err == nil || pctx.Err() != nil || timedOut:
				// Empty for now (only this pull's own timeout says so), or
				// the call ended: no new pulls, but no cancel either (a late
				// cancel still leases messages).
				p.caughtUp.Store(true)
				p.finish()
			case permanent(err):
				p.fail(fmt.Errorf("pubsub source %s: pull: %w", r.subscription, err))
			default:
				r.log.Warn("pubsub pull failed; retrying", "subscription", r.subscription, "err", err)
				p.retry.Store(true)
			}
			return
		}
		p.held.release(n - len(msgs))
		r.c.pulled.Add(int64(len(msgs)))
		b := r.newBatch(p, msgs)
		r.fault(faults.PubSubAfterPull)
		if b.name != "" {
			if err := r.archiveBatch(ctx, p, b); err != nil {
				r.watch.waitOn(b.seq, waitEmit) // no deadline to extend any more
				// Hand them back for prompt redelivery, best effort.
				r.inChunks(b.ackIDs, r.deadline(ctx, 0), "pubsub nack failed; the messages come back after their ack deadline")
				p.held.release(len(msgs))
				b.err = err
				p.results <- b
				return
			}
		}
		r.fault(faults.PubSubAfterArchive)
		r.watch.waitOn(b.seq, waitAcknowledge)
		r.ack(ctx, b.ackIDs)
		r.watch.waitOn(b.seq, waitEmit)
		p.held.release(len(msgs))
		r.fault(faults.PubSubAfterAck)
		p.results <- b
	}
}

// newBatch numbers, names and puts the messages in archive form.
func (r *reader) newBatch(p *pulling, msgs []*pb.ReceivedMessage) *batch {
	now := r.now()
	b := &batch{pulled: now}
	backlog := isBacklog(msgs, now, r.o.BacklogAge)
	for _, m := range msgs {
		b.ackIDs = append(b.ackIDs, m.GetAckId())
		if pt := m.GetMessage().GetPublishTime(); pt != nil {
			p.waitedMs.Add(max(now.Sub(pt.AsTime()).Milliseconds(), 0))
			p.timed.Add(1)
		}
		line := archiveLine(m.GetMessage().GetData())
		if rawlog.Blank(line) {
			r.c.blank.Add(1) // SPEC §3: skipped and not read; acknowledged
			continue
		}
		b.lines = append(b.lines, line)
		b.side = append(b.side, rawlog.SidecarEntry{ID: m.GetMessage().GetMessageId(), Publish: m.GetMessage().GetPublishTime().AsTime().UnixMilli(), Backlog: backlog})
	}
	p.mu.Lock()
	p.seq++
	// A clock stepping back must not sort a name before an old one.
	p.hour = max(p.hour, hourOf(now))
	b.seq, b.hour = p.seq, p.hour
	p.mu.Unlock()
	if len(b.lines) > 0 {
		b.name = makeObjectName(b.hour, b.seq, r.token)
	}
	waiting := waitArchiveWrite
	if b.name == "" {
		waiting = waitAcknowledge
	}
	r.watch.hold(now, b.seq, onHand{waiting: waiting, object: b.name, messages: len(msgs), batch: b})
	return b
}

// archiveBatch writes a batch's object, retrying for at most
// archiveFailAfter; then the call (and the job) fails rather than stall.
func (r *reader) archiveBatch(ctx context.Context, p *pulling, b *batch) error {
	var first time.Time
	wait := 100 * time.Millisecond
	for {
		err := r.store.write(ctx, b.name, b.lines, b.side)
		if err == nil {
			r.c.objects.Add(1)
			for _, l := range b.lines {
				r.c.archiveBytes.Add(int64(len(l)) + 1)
			}
			return nil
		}
		now := r.now()
		if first.IsZero() {
			first = now
		}
		failing := now.Sub(first)
		if failing >= r.o.ArchiveFailAfter || ctx.Err() != nil {
			return fmt.Errorf("pubsub archive %s: cannot write for %s (limit --pubsub-archive-fail-after=%s); %d messages left unacknowledged: %w",
				r.store.dir, failing.Round(time.Millisecond), r.o.ArchiveFailAfter, len(b.ackIDs), err)
		}
		r.c.archiveRetries.Add(1)
		r.log.Warn("pubsub archive write failed; holding the batch and retrying",
			"object", b.name, "messages", len(b.ackIDs), "failing_for", failing.Round(time.Millisecond), "limit", r.o.ArchiveFailAfter, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(min(wait, r.o.ArchiveFailAfter-failing)):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// extendHeld extends the ack deadline of batches held longer than
// extendEvery (a slow archive), so Pub/Sub does not redeliver them meanwhile.
func (r *reader) extendHeld(ctx context.Context, p *pulling, done <-chan struct{}) {
	t := time.NewTicker(r.o.AckExtendEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		extended, _ := r.inChunks(r.watch.due(r.now(), r.o.AckExtendEvery), r.deadline(ctx, r.o.AckExtension),
			"pubsub ack deadline extension failed")
		r.c.extended.Add(extended)
	}
}

// deadline sets the ack deadline of messages to d (0: hand them back).
func (r *reader) deadline(ctx context.Context, d time.Duration) func(ids []string) error {
	return func(ids []string) error {
		return r.sub.ModifyAckDeadline(ctx, &pb.ModifyAckDeadlineRequest{
			Subscription: r.subscription, AckIds: ids, AckDeadlineSeconds: int32(d / time.Second)})
	}
}

// ack acknowledges messages; a failed acknowledge brings them again, and
// dedup drops the copies.
func (r *reader) ack(ctx context.Context, ackIDs []string) {
	acked, failed := r.inChunks(ackIDs, func(ids []string) error {
		return r.sub.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: r.subscription, AckIds: ids})
	}, "pubsub acknowledge failed; the messages come back and are deduplicated")
	r.c.acked.Add(acked)
	r.c.ackErrors.Add(failed)
}

// inChunks calls call on ids in requests of at most ackChunk, logging msg
// for each failed one, and returns how many ids went and failed.
func (r *reader) inChunks(ids []string, call func(ids []string) error, msg string) (ok, failed int64) {
	for chunk := range slices.Chunk(ids, ackChunk) {
		if err := call(chunk); err != nil {
			failed += int64(len(chunk))
			r.log.Warn(msg, "subscription", r.subscription, "messages", len(chunk), "err", err)
		} else {
			ok += int64(len(chunk))
		}
	}
	return ok, failed
}

// isBacklog reports whether a pulled batch comes from a backlog: a message
// published more than age before the pull. Pub/Sub hands out a backlog (after
// an outage) in no order, so the watermark would jump to its end and judge
// older events late although they only waited; while backlog batches come
// the partition watermark holds (watermark.Partition.Backlog), and the first
// fresh batch releases it. The flag is kept in the sidecar, so a re-emit gives
// the same verdicts.
func isBacklog(msgs []*pb.ReceivedMessage, pulled time.Time, age time.Duration) bool {
	return age > 0 && slices.ContainsFunc(msgs, func(m *pb.ReceivedMessage) bool {
		pt := m.GetMessage().GetPublishTime()
		return pt != nil && pulled.Sub(pt.AsTime()) > age
	})
}
