// Package scenario builds event-time test scenarios in a few lines that
// mirror SPEC §7: purchases arriving on partitions, watermark and
// processing-time advances. Records are stamped exactly as a source would
// stamp them (position, read time, the partition watermark just before the
// record, from the real watermark policy), then fed to the pipeline through
// a TestStream.
package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/testing/rowtest"
	"github.com/revenue-stream/hourly/watermark"
)

// Builder accumulates a scenario. Methods panic on misuse: they run in test
// set-up, where a panic names the bad line.
type Builder struct {
	cfg       teststream.Config
	policy    watermark.Policy
	event     event.Config
	tracker   *Tracker
	lines     map[string]int
	now       int64
	watermark int64
	empty     bool
	// rawLog is the folder the lines are also written to ("": none).
	rawLog string
	// Records is every record added, in order (for oracles).
	Records []model.Record
}

// New starts a scenario. now is the processing time the records are read at
// (it must be later than their event times minus --max-future).
func New(p watermark.Policy, ev event.Config, now time.Time) *Builder {
	return &Builder{
		cfg:       teststream.NewConfig(),
		policy:    p,
		event:     ev,
		tracker:   NewTracker(p),
		lines:     map[string]int{},
		now:       now.UnixMilli(),
		watermark: model.NoWatermark,
		empty:     true,
	}
}

// Line adds one raw line read from partition.
func (b *Builder) Line(partition, line string) *Builder {
	b.lines[partition]++
	r := model.Record{
		Partition: partition,
		Position:  fmt.Sprintf("%s/events.jsonl:%d", partition, b.lines[partition]),
		Line:      []byte(line),
		ReadAt:    b.now,
	}
	if b.rawLog != "" {
		r.Ref = b.appendRaw(partition, line)
	}
	ev, q := event.Parse(r, b.event)
	r.WatermarkBefore = b.tracker.Observe(partition, ev.EventTime, q == nil, b.now)
	// Stamped like a source stamps it: the partition watermark before the
	// record, which may be behind the TestStream watermark (late data).
	ts := max(r.WatermarkBefore, int64(mtime.MinTimestamp))
	if err := b.cfg.AddElements(ts, coders.EncodeRecord(r)); err != nil {
		panic(err)
	}
	b.empty = false
	b.Records = append(b.Records, r)
	return b
}

// RawLog makes the scenario write its lines to a raw log in dir as well,
// dir/<partition>/events.jsonl, and give each record its place there
// (model.Record.Ref) as a file source does: the pipeline then drops the
// payloads before the dedup step and reads those of its audit rows back.
// Call it before the first line.
func (b *Builder) RawLog(dir string) *Builder {
	if !b.empty {
		panic("scenario: RawLog after the first line")
	}
	b.rawLog = dir
	return b
}

func (b *Builder) appendRaw(partition, line string) model.LineRef {
	path := filepath.Join(b.rawLog, partition, "events.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		panic(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		panic(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		panic(err)
	}
	return model.LineRef{Path: path, Offset: st.Size(), Length: len(line)}
}

// Purchase adds a purchase event; extra is "key":value JSON fragments.
func (b *Builder) Purchase(partition, id, eventTime, user, amount string, extra ...string) *Builder {
	return b.Line(partition, rowtest.Purchase(id, eventTime, user, amount, extra...))
}

// AdvanceWatermark moves the TestStream watermark to what the policy gives
// now: the minimum over active partitions. (A TestStream carries one
// watermark; the test sets the one the sources would produce.)
func (b *Builder) AdvanceWatermark() *Builder {
	w := b.tracker.Watermark(b.now)
	if w > b.watermark {
		b.watermark = w
		if err := b.cfg.AdvanceWatermark(w); err != nil {
			panic(err)
		}
	}
	return b
}

// Watermark is the scenario's current pipeline watermark.
func (b *Builder) Watermark() int64 { return b.watermark }

// AdvanceProcessingTime moves processing time (EARLY firings) and the read
// time of later records.
//
// Prism schedules a stateful stage of a TestStream pipeline only when its
// input watermark moves (with a real source, self-checkpointing readers lift
// that rule), so the watermark is then nudged by one millisecond: the early
// ticks that the processing-time advance released get processed before the
// next scenario step, as they would be in a streaming run.
func (b *Builder) AdvanceProcessingTime(d time.Duration) *Builder {
	b.cfg.AdvanceProcessingTime(d.Milliseconds())
	b.now += d.Milliseconds()
	b.watermark = max(b.watermark, int64(mtime.MinTimestamp)) + 1
	if err := b.cfg.AdvanceWatermark(b.watermark); err != nil {
		panic(err)
	}
	return b
}

// Create ends the scenario (watermark to infinity, as a bounded replay does)
// and returns the records as a PCollection.
func (b *Builder) Create(s beam.Scope) beam.PCollection {
	if b.empty {
		panic("scenario: no records")
	}
	if err := b.cfg.AdvanceWatermarkToInfinity(); err != nil {
		panic(err)
	}
	return DecodeRecords(s, teststream.Create(s, b.cfg))
}
