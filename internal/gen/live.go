package gen

import (
	"container/heap"
	"context"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/model"
)

// LiveConfig shapes a live feed: purchases written in real time with event times around now, so a
// followed folder sees a window's whole life (EARLY, ON_TIME, LATE, FINAL) within a few windows.
type LiveConfig struct {
	Seed       int64
	Partitions int
	Rate       float64       // events per second per partition
	Tick       time.Duration // how often each partition gets a new file
	// DupRate and ConflictRate: shares of events retried a second or two later.
	DupRate, ConflictRate float64
	MalformedEvery        time.Duration // period of bad lines

	// The job's settings, which place the events relative to window closing.
	Window, Lateness, Bound, IdleTimeout time.Duration
	MaxLine                              int // --max-line (0: 1 MiB)
}

// Live is the feed `launch --demo=live` runs: 4 partitions of 5 purchases a second each, a new
// file per partition every second.
func Live(window, lateness, bound, idleTimeout time.Duration) LiveConfig {
	return LiveConfig{
		Seed:           time.Now().UnixNano(),
		Partitions:     4,
		Rate:           5,
		Tick:           time.Second,
		DupRate:        0.04,
		ConflictRate:   0.01,
		MalformedEvery: 10 * time.Second,
		Window:         window,
		Lateness:       lateness,
		Bound:          bound,
		IdleTimeout:    idleTimeout,
	}
}

// The scenario, in terms of the settings (W window, L lateness, B bound,
// I idle timeout, D = B/2 the disorder of steady traffic):
//   - steady events: event_time in [now-D, now], so within the bound;
//   - offline uploads (LATE revisions): every window, a few events from one
//     device in an active partition, event_time in [now-(L-B), now-(W+2B)]:
//     their windows have had ON_TIME (the watermark is about now-B) and
//     are still open (end + L > now + B > any partition watermark);
//   - too late (rule (a)): every half window, an event in an active
//     partition whose window closed for that partition's own watermark:
//     event_time = max event time written there - B - L - W - margin, and
//     sometimes a copy of it, also too late;
//   - idle: the last partition goes silent for Gap (longer than I, so it
//     turns idle) every Cycle; what its devices sent meanwhile arrives as a
//     burst when it comes back, inside the allowed lateness (LATE
//     revisions, never a window already FINAL: Gap < L - B - D);
//   - malformed lines every MalformedEvery.
func (c LiveConfig) disorder() time.Duration { return c.Bound / 2 }

// Gap is how long the idle partition stays silent: past the idle timeout, and short enough that
// its backlog lands in windows still open.
func (c LiveConfig) Gap() time.Duration {
	room := c.Lateness - c.Bound - c.disorder() - c.IdleTimeout
	return c.IdleTimeout + room/2
}

// Cycle is the period of the idle partition's silences, the first two windows in.
func (c LiveConfig) Cycle() time.Duration { return c.Lateness + 3*c.Window + c.Gap() }

// LateDelay is the interval of the offline uploads' delay behind now.
func (c LiveConfig) LateDelay() [2]time.Duration {
	return [2]time.Duration{c.Window + 2*c.Bound, c.Lateness - c.Bound}
}

// Validate refuses settings the scenario cannot fit, naming the setting.
func (c LiveConfig) Validate() error {
	switch {
	case c.Partitions < 2:
		return fmt.Errorf("live feed: needs at least 2 partitions (one goes idle), got %d", c.Partitions)
	case c.Rate <= 0 || c.Tick <= 0:
		return fmt.Errorf("live feed: rate and tick must be positive")
	case c.Window <= 0 || c.Bound <= 0 || c.IdleTimeout <= 0:
		return fmt.Errorf("live feed: window, out-of-order bound and idle timeout must be positive")
	case c.Bound < 2*c.Tick:
		return fmt.Errorf("live feed: --ooo-bound %v must be at least %v (two file periods)", c.Bound, 2*c.Tick)
	case c.LateDelay()[0] >= c.LateDelay()[1]:
		return fmt.Errorf("live feed: --allowed-lateness %v leaves no room for late uploads: it must exceed window + 3 x ooo-bound (%v)",
			c.Lateness, c.Window+3*c.Bound)
	case c.Gap() < c.IdleTimeout+2*c.Tick:
		return fmt.Errorf("live feed: --allowed-lateness %v leaves no room for an idle partition: it must exceed idle-timeout + 1.5 x ooo-bound + %v (%v)",
			c.Lateness, 4*c.Tick, c.IdleTimeout+c.Bound+c.disorder()+4*c.Tick)
	case c.DupRate < 0 || c.DupRate > 1 || c.ConflictRate < 0 || c.ConflictRate > 1:
		return fmt.Errorf("live feed: rates must be in [0, 1]")
	}
	return nil
}

// LiveStats counts what a live feed wrote.
type LiveStats struct {
	Lines, Files                                int
	Events, Duplicates, Conflicts               int
	Late, Backlog, TooLate, Malformed, IdleGaps int
}

// liveFeed is the state of a running feed.
type liveFeed struct {
	c     LiveConfig
	g     *generator
	stamp string // the run's file-name prefix
	seq   int    // file sequence, shared by all partitions
	next  int    // next event index
	carry []float64
	st    LiveStats
	start int64

	lastLate, lastTooLate, lastBad int64
	silent                         bool
}

// RunLive writes the feed into dir's partitions p0, p1, ... until ctx ends. Files are renamed in,
// named by the start time and a sequence number: lexical order is arrival order, never reused.
func RunLive(ctx context.Context, dir string, c LiveConfig) (LiveStats, error) {
	if err := c.Validate(); err != nil {
		return LiveStats{}, err
	}
	f := newLiveFeed(dir, c, time.Now())
	if err := f.g.mkdirs(); err != nil {
		return f.st, fmt.Errorf("live feed: %w", err)
	}
	t := time.NewTicker(c.Tick)
	defer t.Stop()
	for {
		if err := f.tick(time.Now().UnixMilli()); err != nil {
			return f.st, err
		}
		select {
		case <-ctx.Done():
			return f.st, nil
		case <-t.C:
		}
	}
}

// LivePartitions are the partition folders a feed of c writes.
func LivePartitions(c LiveConfig) []string { return partitionNames(c.Partitions) }

// newLiveFeed leaves the generator's now at its start: every line goes through the queue.
func newLiveFeed(dir string, c LiveConfig, now time.Time) *liveFeed {
	g := newGenerator(dir, Config{Seed: c.Seed, Partitions: c.Partitions, Events: 1 << 20, MaxLine: c.MaxLine, IdlePartition: -1})
	return &liveFeed{c: c, g: g, stamp: now.UTC().Format("20060102T150405"), carry: make([]float64, c.Partitions),
		start: now.UnixMilli(), lastLate: now.UnixMilli(), lastTooLate: now.UnixMilli(), lastBad: now.UnixMilli()}
}

// silentAt reports whether the idle partition is silent at now, and until when.
func (f *liveFeed) silentAt(now int64) (bool, int64) {
	first := f.start + 2*f.c.Window.Milliseconds()
	if now < first {
		return false, 0
	}
	cycle, gap := f.c.Cycle().Milliseconds(), f.c.Gap().Milliseconds()
	k := (now - first) / cycle
	from := first + k*cycle
	return now < from+gap, from + gap
}

// deliver is when a line sent at at in partition p arrives; the last partition goes silent.
func (f *liveFeed) deliver(p int, at int64) int64 {
	if silent, until := f.silentAt(at); silent && p == f.c.Partitions-1 {
		return until
	}
	return at
}

// active picks a partition that is not the idle one.
func (f *liveFeed) active() int { return f.g.rng.IntN(f.c.Partitions - 1) }

// tick generates what is sent at now and writes every line due.
func (f *liveFeed) tick(now int64) error {
	g := f.g
	silent, _ := f.silentAt(now)
	if silent && !f.silent {
		f.st.IdleGaps++
	}
	f.silent = silent
	tick := f.c.Tick.Seconds()
	disorder := f.c.disorder().Milliseconds()
	for p := range f.c.Partitions {
		f.carry[p] += f.c.Rate * tick
		n := int(f.carry[p])
		f.carry[p] -= float64(n)
		for range n {
			at := f.deliver(p, now)
			ev := f.purchase(now - g.rng.Int64N(disorder+1))
			st := g.style()
			line := g.render(&ev, st)
			g.push(p, at, line, true, ev.eventTime)
			f.st.Events++
			if at != now {
				f.st.Backlog++
			}
			if g.rng.Float64() < f.c.DupRate {
				copyLine := g.copyOf(&ev, line, st, 3)
				g.push(p, f.deliver(p, now+200+g.rng.Int64N(2000)), copyLine, true, ev.eventTime)
				f.st.Duplicates++
			}
			if g.rng.Float64() < f.c.ConflictRate {
				bad := ev
				bad.cents = ev.cents + 1 + g.rng.Int64N(ev.cents)
				g.push(p, f.deliver(p, now+500+g.rng.Int64N(3000)), g.render(&bad, g.style()), true, ev.eventTime)
				f.st.Conflicts++
			}
		}
	}
	// Due lines go out first: a too-late event is placed against them.
	if err := f.flush(now); err != nil {
		return err
	}
	window := f.c.Window.Milliseconds()
	if now-f.lastLate >= window && now-f.start >= f.c.LateDelay()[0].Milliseconds() {
		// An offline device uploads what it recorded minutes ago.
		f.lastLate = now
		p := f.active()
		lo, hi := f.c.LateDelay()[0].Milliseconds(), f.c.LateDelay()[1].Milliseconds()
		user := g.user()
		for range 3 + g.rng.IntN(4) {
			ev := f.purchase(now - lo - g.rng.Int64N(hi-lo+1))
			ev.user = user
			g.push(p, now, g.render(&ev, g.style()), true, ev.eventTime)
			f.st.Late++
		}
	}
	if now-f.lastTooLate >= window/2 {
		p := f.active()
		if part := g.parts[p]; part.maxSeen != model.NoWatermark {
			// Closed for the partition's own watermark, with a second of margin: rule (a).
			f.lastTooLate = now
			closed := part.maxSeen - f.c.Bound.Milliseconds() - f.c.Lateness.Milliseconds() - window - 1000
			ev := f.purchase(closed - g.rng.Int64N(window))
			line := g.render(&ev, g.style())
			g.push(p, now, line, true, ev.eventTime)
			f.st.TooLate++
			if g.rng.IntN(3) == 0 {
				g.push(p, now, line, true, ev.eventTime) // its retry: too late as well
				f.st.TooLate++
			}
		}
	}
	if f.c.MalformedEvery > 0 && now-f.lastBad >= f.c.MalformedEvery.Milliseconds() {
		f.lastBad = now
		g.push(f.active(), now, g.malformedLine(now), false, 0)
		f.st.Malformed++
	}
	return f.flush(now)
}

// purchase makes a new event at eventTime.
func (f *liveFeed) purchase(eventTime int64) purchase {
	f.next++
	return f.g.purchase(f.next, eventTime)
}

// flush writes each partition's lines due by now into a new file.
func (f *liveFeed) flush(now int64) error {
	for _, p := range f.g.parts {
		for len(p.q) > 0 && p.q[0].key <= now {
			x := heap.Pop(&p.q).(pending)
			p.buf.Write(x.line)
			p.buf.WriteByte('\n')
			f.st.Lines++
			if x.valid && x.eventTime > p.maxSeen {
				p.maxSeen = x.eventTime
			}
		}
		if p.buf.Len() == 0 {
			continue
		}
		f.seq++
		if err := p.writeFile(fmt.Sprintf("%s-%08d.jsonl", f.stamp, f.seq)); err != nil {
			return fmt.Errorf("live feed: %w", err)
		}
		f.st.Files++
	}
	return nil
}
