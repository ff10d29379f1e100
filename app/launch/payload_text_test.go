package launch

import (
	"context"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/revenue-stream/hourly/sinks/sink"
)

// TestQuarantinedPayloadIsTextInEverySink: a line that is not UTF-8 is
// quarantined (malformed_json) and its payload is stored as text, the same in
// every sink and as the oracle says: the invalid bytes become U+FFFD (the raw
// log keeps the line at its position). A payload column is a STRING in
// BigQuery, which holds UTF-8 only, and the jsonl sink's JSON encoder
// replaced the bytes itself while SQLite kept them, so the same audit row
// read back differently by sink.
func TestQuarantinedPayloadIsTextInEverySink(t *testing.T) {
	bad := `{"event_id":"b` + "\xff\xfe" + `","event_time":"2026-11-04T10:20:00Z","user_id":"u2","amount":"5"}`
	dir := writeLog(t, purchase("A", "2026-11-04T10:15:00Z", "u1", "100"), bad)
	want := oracleOf(t, dir)
	if len(want.Quarantined) != 1 || !utf8.Valid(want.Quarantined[0].Payload) {
		t.Fatalf("oracle quarantined %q, want one row with a UTF-8 payload", want.Quarantined)
	}
	for _, spec := range []sink.Spec{
		{Scheme: sink.SchemeSQLite, Path: filepath.Join(t.TempDir(), "revenue.db")},
		{Scheme: sink.SchemeJSONL, Path: filepath.Join(t.TempDir(), "out")},
	} {
		o := options(t, dir)
		o.Sink = spec
		sum, _ := run(t, o)
		wantCounts(t, sum, 2, 1, 0, 0, 1, 0)
		s, ok, err := sink.OpenReader(context.Background(), spec)
		if err != nil || !ok {
			t.Fatalf("%s: reader %v, %v", spec.Scheme, ok, err)
		}
		d, err := want.SinkDiff(context.Background(), s)
		s.Close()
		if err != nil || d != nil {
			t.Errorf("%s: %v, differences from the oracle: %q", spec.Scheme, err, d)
		}
	}
}
