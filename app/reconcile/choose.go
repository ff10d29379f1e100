package reconcile

import (
	"maps"
	"reflect"
	"slices"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// Copy is one valid copy of an event, reduced to what the choice and the totals need.
type Copy struct {
	EventID  string
	Position string
	// Fingerprint is event.Fingerprint of the copy's business content.
	Fingerprint  uint64
	WindowStart  int64 // epoch ms
	Dims         string
	AmountMicros int64
	// Future: the stream quarantined it as future_event_time; it takes no part in the choice.
	Future bool
}

// Rule says which clause of SPEC §6 decided an id's payload.
type Rule uint8

const (
	// RuleOnePayload: every copy has the same content; nothing to choose.
	RuleOnePayload Rule = iota
	// RuleStreamFingerprint: the payload conflict_events.first_fingerprint names.
	RuleStreamFingerprint
	// RuleCounted: no conflict row; the stream judged copies too late and counted the first other.
	RuleCounted
	// RuleLowestPosition: the copy at the lowest source_position.
	RuleLowestPosition
)

func (r Rule) String() string {
	if names := []string{"one_payload", "stream_fingerprint", "stream_counted", "lowest_position"}; int(r) < len(names) {
		return names[r]
	}
	return "unknown"
}

// Choice folds the copies of one event_id, in any order, into the one reconcile counts. SPEC §6:
// the one the stream counted (conflict_events.first_fingerprint), else the lowest source_position;
// between them, a clause the SPEC implies: a copy in too_late_events was not counted, so others
// come first. The choice is the minimum of the rank (other content, too late, position), so the
// Beam step keeps one Choice per id, never the id's copies.
type Choice struct {
	// Best is the chosen copy; valid once Copies > 0.
	Best Copy
	// Copies counts the copies folded in.
	Copies int

	hasCounted bool
	bestRank   rank
	lowest     string    // lowest position over all copies
	contents   []content // one per distinct fingerprint, in order seen
}

// content tallies the copies of one payload content.
type content struct {
	fp     uint64
	copies int
	// tooLate counts the copies the stream judged too late.
	tooLate int
	// counted: some copy was not too late, so the stream counted this content.
	counted bool
}

type rank struct {
	otherContent, tooLate bool
	position              string
}

// less orders ranks: false before true, then positions in replay order.
func (a rank) less(b rank) bool {
	if a.otherContent != b.otherContent {
		return !a.otherContent
	}
	if a.tooLate != b.tooLate {
		return !a.tooLate
	}
	return rawlog.ComparePositions(a.position, b.position) < 0
}

// Add folds in one copy: counted and hasCounted are the id's Evidence.Counted entry, tooLate
// whether the copy's position is in Evidence.TooLate.
func (ch *Choice) Add(c Copy, counted uint64, hasCounted, tooLate bool) {
	r := rank{otherContent: hasCounted && c.Fingerprint != counted, tooLate: tooLate, position: c.Position}
	if ch.Copies == 0 {
		ch.Best, ch.bestRank, ch.lowest, ch.hasCounted = c, r, c.Position, hasCounted
	} else {
		if rawlog.ComparePositions(c.Position, ch.lowest) < 0 {
			ch.lowest = c.Position
		}
		if r.less(ch.bestRank) {
			ch.Best, ch.bestRank = c, r
		}
	}
	ch.Copies++
	for i := range ch.contents {
		if ch.contents[i].fp == c.Fingerprint {
			ch.contents[i].copies++
			ch.contents[i].counted = ch.contents[i].counted || !tooLate
			ch.contents[i].tooLate += b2i(tooLate)
			return
		}
	}
	ch.contents = append(ch.contents, content{fp: c.Fingerprint, copies: 1, counted: !tooLate, tooLate: b2i(tooLate)})
}

func (ch Choice) chosen() content {
	for _, c := range ch.contents {
		if c.fp == ch.Best.Fingerprint {
			return c
		}
	}
	return content{}
}

// Payloads is the number of distinct contents among the copies.
func (ch Choice) Payloads() int { return len(ch.contents) }

// Conflicting counts the copies whose content differs from the chosen one.
func (ch Choice) Conflicting() int { return ch.Copies - ch.chosen().copies }

// Duplicates counts the extra copies identical to the chosen one.
func (ch Choice) Duplicates() int { return max(ch.chosen().copies-1, 0) }

// DuplicatesTooLate and ConflictingTooLate count the too-late copies among Duplicates and
// Conflicting: the too-late gate comes before dedup (SPEC §4).
func (ch Choice) DuplicatesTooLate() int {
	return max(ch.chosen().tooLate-b2i(ch.Copies > 0 && ch.bestRank.tooLate), 0)
}

// ConflictingTooLate: see DuplicatesTooLate.
func (ch Choice) ConflictingTooLate() int {
	n := 0
	for _, c := range ch.contents {
		n += c.tooLate
	}
	return n - ch.chosen().tooLate
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TooLate says every copy of the chosen content was too late: the stream never counted the id.
func (ch Choice) TooLate() bool { return ch.Copies > 0 && !ch.chosen().counted }

// StreamFingerprintMissing says no copy has conflict_events' content: lower clauses decided.
func (ch Choice) StreamFingerprintMissing() bool { return ch.hasCounted && ch.bestRank.otherContent }

// Rule reports which clause decided the choice.
func (ch Choice) Rule() Rule {
	switch {
	case len(ch.contents) < 2:
		return RuleOnePayload
	case ch.hasCounted && !ch.bestRank.otherContent:
		return RuleStreamFingerprint
	case ch.Best.Position != ch.lowest:
		return RuleCounted
	}
	return RuleLowestPosition
}

// Totals returns what the chosen event contributes to its window key.
func (ch Choice) Totals() Totals {
	t := Totals{RevenueMicros: ch.Best.AmountMicros, Count: 1}
	if ch.TooLate() {
		t.TooLateRevenueMicros, t.TooLateCount = ch.Best.AmountMicros, 1
	}
	return t
}

// Stats account for what the recomputation read and chose (SPEC §4): Read = Valid + quarantined,
// Valid = IDs + Duplicates + ConflictingCopies.
type Stats struct {
	Partitions int64 `json:"partitions"`
	Files      int64 `json:"files"`
	// Read counts records (non-blank complete lines); Blank the skipped blank lines.
	Read  int64 `json:"read"`
	Blank int64 `json:"blank"`
	// Unterminated lists final lines without a newline (read as lines, SPEC §3).
	Unterminated []string `json:"unterminated,omitempty"`
	// Quarantined counts rejected records by reason.
	Quarantined map[string]int64 `json:"quarantined,omitempty"`
	// StreamFuture counts records the stream quarantined as future_event_time, left out (and in
	// Quarantined): no recomputation can replay the stream's read time.
	StreamFuture int64 `json:"stream_future"`
	// Valid counts valid copies.
	Valid int64 `json:"valid"`

	// IDs counts distinct event ids, each counted once.
	IDs int64 `json:"ids"`
	// Duplicates counts extra copies identical to the chosen one.
	Duplicates int64 `json:"duplicates"`
	// ConflictingIDs counts ids with several payloads; ConflictingCopies the copies not chosen.
	ConflictingIDs    int64 `json:"conflicting_ids"`
	ConflictingCopies int64 `json:"conflicting_copies"`
	// DuplicatesTooLate and ConflictingTooLate: see Choice.DuplicatesTooLate.
	DuplicatesTooLate  int64 `json:"duplicates_too_late"`
	ConflictingTooLate int64 `json:"conflicting_too_late"`
	// By* count, among ConflictingIDs, which SPEC §6 clause chose.
	ByStreamFingerprint int64 `json:"by_stream_fingerprint"`
	ByStreamCounted     int64 `json:"by_stream_counted"`
	ByLowestPosition    int64 `json:"by_lowest_position"`
	// StreamFingerprintMissing counts ids whose conflict_events fingerprint matches no copy.
	StreamFingerprintMissing int64 `json:"stream_fingerprint_missing"`
	// TooLateIDs counts ids every chosen copy of which was too late.
	TooLateIDs int64 `json:"too_late_ids"`

	// LogWatermark is the lowest partition watermark at the end of the log (HasLogWatermark: there
	// is one): how far the raw log reaches.
	LogWatermark    int64 `json:"log_watermark"`
	HasLogWatermark bool  `json:"has_log_watermark"`
}

// Merge adds two partial Stats: every count (each int64 field but LogWatermark) sums, the lists
// and reasons join, and the log watermark is the lower one.
func (s Stats) Merge(o Stats) Stats {
	sv, ov := reflect.ValueOf(&s).Elem(), reflect.ValueOf(o)
	for i := range sv.NumField() {
		if f := sv.Field(i); f.Kind() == reflect.Int64 && sv.Type().Field(i).Name != "LogWatermark" {
			f.SetInt(f.Int() + ov.Field(i).Int())
		}
	}
	if len(o.Unterminated) > 0 {
		s.Unterminated = append(slices.Clip(s.Unterminated), o.Unterminated...)
		slices.Sort(s.Unterminated)
	}
	if len(o.Quarantined) > 0 {
		q := make(map[string]int64, len(s.Quarantined)+len(o.Quarantined))
		maps.Copy(q, s.Quarantined)
		for k, v := range o.Quarantined {
			q[k] += v
		}
		s.Quarantined = q
	}
	switch {
	case !o.HasLogWatermark:
	case !s.HasLogWatermark || o.LogWatermark < s.LogWatermark:
		s.LogWatermark, s.HasLogWatermark = o.LogWatermark, true
	}
	return s
}

// StreamCounts returns the figures in the stream's terms (SPEC §4): a too-late duplicate or
// conflicting copy is the stream's too_late. A stream that read the whole log once reports the same
// figures.
func (s Stats) StreamCounts() metrics.Counts {
	return metrics.Counts{
		Read:        s.Read,
		Counted:     s.IDs - s.TooLateIDs,
		Duplicates:  s.Duplicates - s.DuplicatesTooLate,
		Conflicts:   s.ConflictingCopies - s.ConflictingTooLate,
		Quarantined: s.QuarantinedTotal(),
		TooLate:     s.TooLateIDs + s.DuplicatesTooLate + s.ConflictingTooLate,
	}
}

// QuarantinedTotal sums Quarantined over reasons.
func (s Stats) QuarantinedTotal() int64 {
	var n int64
	for _, v := range s.Quarantined {
		n += v
	}
	return n
}

func (s *Stats) count(ch Choice) {
	s.IDs++
	s.Duplicates += int64(ch.Duplicates())
	s.DuplicatesTooLate += int64(ch.DuplicatesTooLate())
	if ch.Payloads() > 1 {
		s.ConflictingIDs++
		s.ConflictingCopies += int64(ch.Conflicting())
		s.ConflictingTooLate += int64(ch.ConflictingTooLate())
	}
	if by := [...]*int64{RuleStreamFingerprint: &s.ByStreamFingerprint, RuleCounted: &s.ByStreamCounted,
		RuleLowestPosition: &s.ByLowestPosition}[ch.Rule()]; by != nil {
		*by++
	}
	if ch.StreamFingerprintMissing() {
		s.StreamFingerprintMissing++
	}
	if ch.TooLate() {
		s.TooLateIDs++
	}
}

// logWatermark renders the log watermark for reports.
func (s Stats) logWatermark() string {
	if !s.HasLogWatermark || s.LogWatermark == model.NoWatermark {
		return "none"
	}
	return model.FormatTime(s.LogWatermark)
}
