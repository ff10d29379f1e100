package advise

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
	"github.com/revenue-stream/hourly/watermark"
)

// never is the idle timeout of "no partition ever goes idle".
const never = 100 * 365 * 24 * time.Hour

// sim is one replay of the log's watermarks under one bound and idle timeout, with
// watermark.Partition's rules, so the advisor's watermarks are the stream's.
type sim struct {
	bound, idle time.Duration
	// own is each record's partition watermark before it (rule (a)); pipe the pipeline watermark
	// when it arrives (rule (b)); without a clock pipe is own.
	own, pipe []int64
	// onTime maps window starts to when the pipeline watermark reaches their end (absent: never;
	// nil without a clock).
	onTime map[int64]int64
	// episode is, per record, the idle episode its partition last came back from (-1: none).
	episode []int32
}

// replayWatermarks runs the watermark rules over the log in arrival order.
func replayWatermarks(l *replayLog, p watermark.Policy, tp triggers.Policy) *sim {
	s := &sim{bound: p.OutOfOrderBound, idle: p.IdleTimeout}
	if l.clock == NoClock {
		s.own = ownWatermarks(l, p)
		s.pipe = s.own
		return s
	}
	s.own = make([]int64, len(l.recs))
	s.pipe, s.episode = make([]int64, len(l.recs)), make([]int32, len(l.recs))
	c := newClockRun(l, p, tp)
	for i, r := range l.recs {
		c.advance(r.at)
		s.pipe[i] = c.pipe
		part := c.parts[r.part]
		if part.Idle(r.at) {
			// The first record after a silence long enough to go idle.
			c.back[r.part] = int32(c.episodes)
			c.episodes++
		}
		part.Backlog(r.backlog)
		s.own[i] = part.Observe(r.et, r.valid, r.at)
		s.episode[i] = c.back[r.part]
	}
	c.advance(math.MaxInt64) // the log's end: idleness and processing time go on
	s.onTime = c.onTimes()
	return s
}

// ownWatermarks is each record's partition watermark before it (rule (a)), partitions replayed
// one after another, without a clock.
func ownWatermarks(l *replayLog, p watermark.Policy) []int64 {
	parts := make([]*watermark.Partition, len(l.Partitions))
	for i := range parts {
		parts[i] = watermark.NewPartition(p, 0)
	}
	own := make([]int64, len(l.recs))
	for i, r := range l.recs {
		own[i] = parts[r.part].Observe(r.et, r.valid, 0)
	}
	return own
}

// clockRun is the replay with an arrival clock: every partition reports at every instant something
// can change, and the pipeline watermark is the minimum, as a runner computes it.
type clockRun struct {
	idle      int64 // ms
	parts     []*watermark.Partition
	reported  []int64
	back      []int32 // per partition: the episode it came back from last
	episodes  int
	pipe      int64
	crossings []int64 // window end + bound, sorted; next is crossings[0]
	breaksAt  []int64 // processing times the pipeline watermark rose at
	breaksTo  []int64 // and the value it rose to
	starts    []int64 // window starts with valid data, sorted
	tp        triggers.Policy
	now       int64
}

func newClockRun(l *replayLog, p watermark.Policy, tp triggers.Policy) *clockRun {
	c := &clockRun{idle: p.IdleTimeout.Milliseconds(), pipe: model.NoWatermark, now: math.MinInt64, tp: tp}
	for range l.Partitions {
		c.parts = append(c.parts, watermark.NewPartition(p, l.First))
		c.reported = append(c.reported, model.NoWatermark)
		c.back = append(c.back, -1)
	}
	seen := map[int64]bool{}
	for _, r := range l.recs {
		if r.valid {
			seen[tp.WindowStart(r.et)] = true
		}
	}
	c.starts = slices.Sorted(maps.Keys(seen))
	c.crossings = slicesx.Map(c.starts, func(ws int64) int64 { return tp.WindowEnd(ws) + p.OutOfOrderBound.Milliseconds() })
	return c
}

// advance reports every instant before t, then t (MaxInt64: all remaining).
func (c *clockRun) advance(t int64) {
	for {
		next := c.nextInstant()
		if next >= t {
			break
		}
		c.report(next)
	}
	if t != math.MaxInt64 && t > c.now {
		// Once per instant: the records that arrived before it made its watermark.
		c.report(t)
	}
}

// nextInstant is the next time a report can change without an arrival: an idle timeout, or end +
// bound.
func (c *clockRun) nextInstant() int64 {
	next := int64(math.MaxInt64)
	for len(c.crossings) > 0 && c.crossings[0] <= c.now {
		c.crossings = c.crossings[1:]
	}
	if len(c.crossings) > 0 {
		next = c.crossings[0]
	}
	for _, p := range c.parts {
		if at := event.SatAdd(p.State().LastActive, c.idle); at > c.now {
			next = min(next, at)
		}
	}
	return next
}

// report takes every partition's watermark at now and the minimum.
func (c *clockRun) report(now int64) {
	c.now = now
	// The lowest active reports, for the all-idle rule of --idle-advance.
	low1, low2, lowAt, active := int64(math.MaxInt64), int64(math.MaxInt64), -1, 0
	for i, p := range c.parts {
		if p.Idle(now) {
			continue
		}
		active++
		switch w := c.reported[i]; {
		case w < low1:
			low1, low2, lowAt = w, low1, i
		case w < low2:
			low2 = w
		}
	}
	pipe := int64(math.MaxInt64)
	for i, p := range c.parts {
		others, any := low1, active > 0
		if !p.Idle(now) {
			any = active > 1
			if i == lowAt {
				others = low2
			}
		}
		c.reported[i] = p.Report(now, others, any).Watermark
		pipe = min(pipe, c.reported[i])
	}
	if pipe > c.pipe {
		c.pipe = pipe
		c.breaksAt, c.breaksTo = append(c.breaksAt, now), append(c.breaksTo, pipe)
	}
}

// onTimes finds when the pipeline watermark first reached each window's end.
func (c *clockRun) onTimes() map[int64]int64 {
	out := make(map[int64]int64, len(c.starts))
	for _, ws := range c.starts {
		if i, _ := slices.BinarySearch(c.breaksTo, c.tp.WindowEnd(ws)); i < len(c.breaksTo) {
			out[ws] = c.breaksAt[i]
		}
	}
	return out
}
