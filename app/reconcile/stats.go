package reconcile

import (
	"maps"
	"reflect"
	"slices"

	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

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

// count tallies one choice.
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
