package advise

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/event"
	_ "github.com/revenue-stream/hourly/internal/files/gcs" // gs:// paths
	_ "github.com/revenue-stream/hourly/internal/files/s3"  // s3:// paths
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/pubsub"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// Clock is where a record's arrival instant comes from.
type Clock uint8

const (
	// NoClock: nothing says when records arrived. ON_TIME timing and idleness are not computed, and
	// partitions are judged by their own watermarks (an upper bound for a live job).
	NoClock Clock = iota
	// FieldClock: a payload field (--arrival-field).
	FieldClock
	// PublishClock: a Pub/Sub archive's publish times (its sidecars).
	PublishClock
)

func (c Clock) String() string {
	return [...]string{"none", "payload field", "Pub/Sub publish time"}[c]
}

// rec is one record of the replayed log, validated once with the job's rules.
type rec struct {
	at      int64 // arrival, epoch ms (non-decreasing within a partition); 0 without a clock
	et      int64 // event time (valid records)
	amount  int64 // micros
	fp      uint64
	id      uint32 // interned event_id
	seg     uint32 // interned segment
	part    uint16
	valid   bool
	backlog bool // a Pub/Sub archive line pulled from a backlog
}

// replayLog is the whole raw log in arrival order: by arrival, partition, then file order (without
// a clock, partition after partition), with its summary.
type replayLog struct {
	LogSummary
	clock Clock
	recs  []rec
	// first is, per event id, its first valid copy's index in recs, +1.
	first []int32
}

// readLog reads every partition in arrival order with the stream's rules, and the archive's
// sidecars for publish times and backlog flags.
func readLog(ctx context.Context, o Options) (*replayLog, error) {
	parts, err := rawlog.ReadablePartitions(o.Source)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("--source %s: no such folder", o.Source)
	case errors.Is(err, rawlog.ErrNoPartitions):
		return nil, fmt.Errorf("--source %s: %w", o.Source, err)
	case err != nil:
		return nil, err
	}
	if len(parts) > math.MaxUint16 {
		return nil, fmt.Errorf("--source %s: %d partitions, more than the advisor reads (%d)", o.Source, len(parts), math.MaxUint16)
	}
	l := &replayLog{LogSummary: LogSummary{Source: o.Source, Partitions: parts, Quarantined: map[string]int64{}}}
	if o.ArrivalField != "" {
		l.clock = FieldClock
	} else if archive(parts) {
		l.clock = PublishClock
	}
	r := newReader(o, l)
	var byPart [][]rec
	for i, p := range parts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		recs, err := r.partition(uint16(i), p)
		if err != nil {
			return nil, err
		}
		byPart = append(byPart, recs)
	}
	if l.clock != NoClock && l.NoArrival == l.Read {
		where := "no Pub/Sub archive sidecar names a publish time"
		if o.ArrivalField != "" {
			where = "no readable --arrival-field=" + o.ArrivalField
		}
		return nil, fmt.Errorf("--source %s: no record has an arrival instant (%s): %s", o.Source, where,
			"a demo log written before received_at was added? Delete it and run cmd/launch to write it again")
	}
	l.IDs, l.Segments, l.Clock = len(r.ids), r.segs, l.clock.String()
	l.recs = slices.Concat(byPart...)
	if l.clock != NoClock {
		// Stable: ties keep partition order, then each partition's own.
		slices.SortStableFunc(l.recs, func(a, b rec) int { return cmp.Compare(a.at, b.at) })
		l.First, l.Last = l.recs[0].at, l.recs[len(l.recs)-1].at
	}
	l.first = make([]int32, l.IDs)
	for i, r := range l.recs {
		if r.valid && l.first[r.id] == 0 {
			l.first[r.id] = int32(i + 1)
		}
	}
	return l, nil
}

// archive reports whether the partitions are a Pub/Sub archive's.
func archive(parts []string) bool {
	return !slices.ContainsFunc(parts, func(p string) bool {
		return p != pubsub.Partition && !strings.HasPrefix(p, pubsub.Partition+"-")
	})
}

type reader struct {
	o   Options
	l   *replayLog
	ids map[string]uint32
	// segs interns segment keys; segIdx finds them.
	segs   []string
	segIdx map[string]uint32
	// side parses the segment and arrival fields (nil when neither is asked for).
	side *event.Config
	now  int64
}

func newReader(o Options, l *replayLog) *reader {
	r := &reader{o: o, l: l, ids: map[string]uint32{}, segIdx: map[string]uint32{}, now: o.Now.UnixMilli()}
	r.intern(event.NoDims)
	if len(o.Segments) > 0 || o.ArrivalField != "" {
		c := o.Event
		c.Dimensions = slices.Clone(o.Segments)
		if o.ArrivalField != "" {
			c.Dimensions = append(c.Dimensions, o.ArrivalField)
		}
		slices.Sort(c.Dimensions)
		c.Dimensions, c.MaxAge = slices.Compact(c.Dimensions), 0
		r.side = &c
	}
	return r
}

func (r *reader) intern(seg string) uint32 {
	i, ok := r.segIdx[seg]
	if !ok {
		i = uint32(len(r.segs))
		r.segs = append(r.segs, seg)
		r.segIdx[seg] = i
	}
	return i
}

// partition reads one partition in its arrival order.
func (r *reader) partition(idx uint16, name string) ([]rec, error) {
	var out []rec
	var side sidecar
	st := rawlog.NewStamper(r.o.Watermark, r.o.Event, r.now)
	info, err := rawlog.Scan(r.o.Source, name, r.o.Event.MaxLine, r.now, func(m model.Record) error {
		r.l.Read++
		x := rec{part: idx, at: -1}
		if r.l.clock == PublishClock {
			e, err := side.entry(r.o.Source, m.Position)
			if err != nil {
				return err
			}
			if e != nil {
				x.at, x.backlog = e.Publish, e.Backlog
			}
		}
		seg := uint32(0)
		if r.side != nil {
			at, s := r.sideFields(m)
			if r.l.clock == FieldClock {
				x.at = at
			}
			seg = s
		}
		if x.at >= 0 {
			m.ReadAt = x.at // a live job reads the record when it arrives
		}
		st.Partition().Backlog(x.backlog)
		ev, q := st.Stamp(&m)
		if q != nil {
			r.l.Quarantined[q.Reason]++
		} else {
			r.l.Valid++
			id, ok := r.ids[ev.EventID]
			if !ok {
				if len(r.ids) == math.MaxUint32 {
					return fmt.Errorf("more than %d distinct event ids: advise on a shorter stretch (--from/--to select windows, a smaller folder the records)", math.MaxUint32)
				}
				id = uint32(len(r.ids))
				r.ids[ev.EventID] = id
			}
			x.valid, x.et, x.amount, x.fp, x.id, x.seg = true, ev.EventTime, ev.AmountMicros, ev.Fingerprint, id, seg
		}
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read partition %q: %w", name, err)
	}
	r.l.Blank += int64(info.Blank)
	if r.l.clock != NoClock {
		r.l.NoArrival += fillArrivals(out)
	}
	return out, nil
}

// sideFields reads a record's arrival (-1 when absent) and segment, as event.Parse spells them.
func (r *reader) sideFields(m model.Record) (at int64, seg uint32) {
	m.ReadAt, m.WatermarkBefore = math.MaxInt64/2, model.NoWatermark // only the fields are wanted here
	ev, q := event.Parse(m, *r.side)
	if q != nil {
		return -1, 0
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ev.Dims), &fields); err != nil {
		return -1, 0
	}
	at = -1
	if raw := fields[r.o.ArrivalField]; r.o.ArrivalField != "" && string(raw) != "null" {
		if t, err := event.ParseEventTime(raw); err == nil {
			at = t
		}
	}
	s, err := event.CanonicalDims(fields, r.o.Segments)
	if err != nil {
		return at, 0
	}
	return at, r.intern(s)
}

// fillArrivals makes a partition's arrivals usable: never going back (line k is read after k-1), a
// missing one taken from its predecessor (the first ones from their successor). It returns how many
// were missing.
func fillArrivals(recs []rec) (missing int64) {
	last := int64(-1)
	for i := range recs {
		if recs[i].at < 0 {
			missing++
		}
		if recs[i].at < last {
			recs[i].at = last
		}
		last = recs[i].at
	}
	// The missing ones left are a prefix: they take the first known arrival (0 if none is).
	first, n := int64(0), len(recs)
	if k := slices.IndexFunc(recs, func(r rec) bool { return r.at >= 0 }); k >= 0 {
		first, n = recs[k].at, k
	}
	for i := range recs[:n] {
		recs[i].at = first
	}
	return missing
}

// sidecar reads the Pub/Sub archive's sidecar of the file being scanned.
type sidecar struct {
	file    string // partition/file of entries
	entries []rawlog.SidecarEntry
}

// entry is the sidecar entry at a file position, nil when the sidecar has none.
func (s *sidecar) entry(dir, pos string) (*rawlog.SidecarEntry, error) {
	part, file, line, ok := rawlog.ParsePosition(pos)
	if !ok {
		return nil, nil
	}
	if key := part + "/" + file; key != s.file {
		entries, err := rawlog.ReadSidecar(context.Background(), rawlog.PartitionDir(dir, part), file)
		if err != nil {
			return nil, fmt.Errorf("pubsub archive sidecar of %s: %w", key, err)
		}
		s.file, s.entries = key, entries
	}
	if line-1 < len(s.entries) {
		return &s.entries[line-1], nil
	}
	return nil, nil
}
