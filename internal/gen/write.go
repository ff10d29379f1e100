package gen

import (
	"bytes"
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// Write generates the log described by c (and c alone) into dir, which must be absent or empty.
// Each file is renamed in when complete, as a producer does; on error dir may hold a partial log.
func Write(dir string, c Config) (Stats, error) {
	if err := c.Validate(); err != nil {
		return Stats{}, err
	}
	if err := prepare(dir); err != nil {
		return Stats{}, err
	}
	g := newGenerator(dir, c)
	if err := g.run(); err != nil {
		return Stats{}, fmt.Errorf("gen: write %s: %w", dir, err)
	}
	return g.stats, nil
}

// prepare creates dir, refusing a non-empty one.
func prepare(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("gen: read %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("gen: %s is not empty; refusing to mix logs", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gen: create %s: %w", dir, err)
	}
	return nil
}

// pending is a line waiting for its arrival instant in its partition.
type pending struct {
	key  int64  // arrival instant, epoch ms
	seq  uint64 // generation order: ties keep it
	line []byte
	// valid lines advance the partition's progress with their event time.
	valid     bool
	eventTime int64
}

type queue []pending

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	return q[i].key < q[j].key || (q[i].key == q[j].key && q[i].seq < q[j].seq)
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(pending)) }
func (q *queue) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = pending{}
	*q = old[:len(old)-1]
	return x
}

// partition is one output partition: its arrival queue and the file being filled.
type partition struct {
	name, dir string
	q         queue
	// maxSeen is the largest valid event time written so far, or model.NoWatermark.
	maxSeen int64

	file int          // index of the file being filled, -1 before the first
	buf  bytes.Buffer // its lines so far
}

// writeFile writes the partition's lines so far as the file name, renamed in when complete as a
// producer does (no fsync: a log can be generated again), and empties the buffer.
func (p *partition) writeFile(name string) error {
	tmp := filepath.Join(p.dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, p.buf.Bytes(), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	p.buf.Reset()
	return os.Rename(tmp, filepath.Join(p.dir, name))
}

type generator struct {
	c     Config
	rng   *rand.Rand
	zipf  *rand.Zipf
	parts []*partition
	stats Stats
	seq   uint64
	now   int64 // the arrival instant being generated: due lines go out at once
	err   error // the first write error of push

	start, span, window, lateness int64 // ms
	idleFrom, idleTo              int64 // the idle partition's silence, ms
	maxLine                       int

	// The window that only too-late events reach (see forceMissing).
	missing       int64
	forcedLeft    int
	malformedSeen int

	buf []byte // scratch for rendering
}

func newGenerator(dir string, c Config) *generator {
	g := &generator{
		c:        c,
		rng:      rand.New(rand.NewPCG(uint64(c.Seed), 0x9e3779b97f4a7c15)),
		start:    c.Start.UTC().UnixMilli(),
		span:     c.Span.Milliseconds(),
		window:   c.Window.Milliseconds(),
		lateness: c.Lateness.Milliseconds(),
		maxLine:  cmp.Or(c.MaxLine, rawlog.DefaultMaxLine),
		now:      math.MinInt64,
		stats: Stats{
			Events:         c.Events,
			MalformedKinds: map[string]int{},
			Counted:        map[int64]Total{},
			All:            map[int64]Total{},
		},
	}
	users := max(50, c.Events/8)
	g.zipf = rand.NewZipf(g.rng, 1.2, 4, uint64(users-1))
	if c.IdlePartition >= 0 {
		mid := g.start + g.span/2
		g.idleFrom = mid - c.IdleGap.Milliseconds()/2
		g.idleTo = g.idleFrom + c.IdleGap.Milliseconds()
	}
	g.stats.Partitions = partitionNames(c.Partitions)
	for _, name := range g.stats.Partitions {
		g.parts = append(g.parts, &partition{name: name, dir: filepath.Join(dir, name), maxSeen: model.NoWatermark, file: -1})
	}
	if c.TooLateRate > 0 && c.Events >= 20 {
		// The latest window no counted event can reach: max(Disorder, LateDelay[1]) before the start.
		lag := max(c.Disorder, c.LateDelay[1]).Milliseconds()
		g.missing = windowStart(g.start-lag, g.window) - g.window
		g.forcedLeft = 3
	}
	return g
}

func windowStart(ts, w int64) int64 {
	s := ts - ts%w
	if ts%w < 0 {
		s -= w
	}
	return s
}

// closeTime is when a window stops being correctable: end + lateness.
func (g *generator) closeTime(eventTime int64) int64 {
	return windowStart(eventTime, g.window) + g.window + g.lateness
}

// deliver moves an arrival inside the idle partition's silence to its end (a burst).
func (g *generator) deliver(p int, at int64) int64 {
	if p == g.c.IdlePartition && at >= g.idleFrom && at < g.idleTo {
		return g.idleTo
	}
	return at
}

// push queues a line arriving at instant at in partition p; a line due now goes straight out.
func (g *generator) push(p int, at int64, line []byte, valid bool, eventTime int64) {
	g.seq++
	x := pending{key: at, seq: g.seq, line: line, valid: valid, eventTime: eventTime}
	if at <= g.now {
		if err := g.emit(g.parts[p], x); err != nil && g.err == nil {
			g.err = err
		}
		return
	}
	heap.Push(&g.parts[p].q, x)
}

// partitionNames are p0, p1, ...
func partitionNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "p" + strconv.Itoa(i)
	}
	return out
}

func (g *generator) mkdirs() error {
	for _, p := range g.parts {
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return fmt.Errorf("create partition %s: %w", p.name, err)
		}
	}
	return nil
}

func (g *generator) run() error {
	if err := g.mkdirs(); err != nil {
		return err
	}
	n := g.c.Events
	malformed := int(math.Round(g.c.MalformedRate * float64(n)))
	for i := range n {
		// Stratified arrivals: increasing, with random spacing.
		at := g.start + int64((float64(i)+g.rng.Float64())*float64(g.span)/float64(n))
		// Due lines go out first: a too-late event is placed against them.
		if err := g.flush(at); err != nil {
			return err
		}
		g.now = at
		for range malformed*(i+1)/n - malformed*i/n {
			p := g.rng.IntN(len(g.parts))
			g.push(p, g.deliver(p, at), g.malformedLine(at), false, 0)
		}
		g.original(i, at)
		if g.err != nil {
			return g.err
		}
	}
	if err := g.flush(math.MaxInt64); err != nil {
		return err
	}
	// Every partition has all its files, the last ones perhaps empty.
	for _, p := range g.parts {
		for p.file < g.c.FilesPerPartition {
			if err := g.nextFile(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes every queued line due by instant at, in arrival order.
func (g *generator) flush(at int64) error {
	for _, p := range g.parts {
		for len(p.q) > 0 && p.q[0].key <= at {
			x := heap.Pop(&p.q).(pending)
			if err := g.emit(p, x); err != nil {
				return err
			}
		}
	}
	return nil
}

func (g *generator) emit(p *partition, x pending) error {
	idx := 0
	if g.span > 0 {
		idx = int(min(max((x.key-g.start)*int64(g.c.FilesPerPartition)/g.span, 0), int64(g.c.FilesPerPartition-1)))
	}
	for p.file < idx {
		if err := g.nextFile(p); err != nil {
			return err
		}
	}
	// A few blank lines and CRLF endings, which readers must skip and strip.
	if g.rng.IntN(5000) == 0 {
		g.stats.Lines++
		g.stats.Blank++
		p.buf.WriteString("  \n")
	}
	eol := "\n"
	if g.rng.IntN(2000) == 0 {
		eol = "\r\n"
	}
	line := x.line
	if x.valid && g.c.ArrivalField != "" {
		// Spliced in at the instant it arrives (a retry's copy is another arrival).
		line = append(append(line[:len(line)-1:len(line)-1], `,"`+g.c.ArrivalField+`":"`...),
			time.UnixMilli(x.key).UTC().Format("2006-01-02T15:04:05.000Z07:00")+`"}`...)
	}
	p.buf.Write(line)
	p.buf.WriteString(eol)
	g.stats.Lines++
	if x.valid && x.eventTime > p.maxSeen {
		p.maxSeen = x.eventTime
	}
	return nil
}

// nextFile writes out the partition's file being filled, if any, and starts the next one.
func (g *generator) nextFile(p *partition) error {
	if p.file >= 0 {
		if err := p.writeFile(fmt.Sprintf("%06d.jsonl", p.file+1)); err != nil {
			return err
		}
		g.stats.Files++
	}
	p.file++
	return nil
}
