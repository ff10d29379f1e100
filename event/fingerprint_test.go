package event

import (
	"testing"

	"github.com/revenue-stream/hourly/model"
)

// TestFingerprintGolden pins the encoding: fingerprints are stored in audit
// tables and compared across releases and with the reconcile job, so a change
// here is a breaking change (bump the domain string instead). The values were
// cross-checked with an independent Python implementation of the layout
// documented on Fingerprint.
func TestFingerprintGolden(t *testing.T) {
	tests := []struct {
		timeMs  int64
		user    string
		amount  int64
		dims    string
		wantHex string
	}{
		{1793787300000, "u7", 100_000_000, "{}", "aa27ccdb2f2af6bc"},
		{1793787300000, "u7", 100_000_000, `{"region":"eu"}`, "a384c17a9449dfc3"},
		{-1, "ü", -5, "{}", "5c5f6eaab8842a09"},
	}
	for _, tt := range tests {
		if got := model.FingerprintHex(Fingerprint(tt.timeMs, tt.user, tt.amount, tt.dims)); got != tt.wantHex {
			t.Errorf("Fingerprint(%d, %q, %d, %q) = %s, want %s", tt.timeMs, tt.user, tt.amount, tt.dims, got, tt.wantHex)
		}
	}
}

func TestFingerprintDistinguishesFields(t *testing.T) {
	base := Fingerprint(1793787300000, "u7", 100_000_000, `{"region":"eu"}`)
	others := map[string]uint64{
		"time +1ms":           Fingerprint(1793787300001, "u7", 100_000_000, `{"region":"eu"}`),
		"amount +1 micro":     Fingerprint(1793787300000, "u7", 100_000_001, `{"region":"eu"}`),
		"refund":              Fingerprint(1793787300000, "u7", -100_000_000, `{"region":"eu"}`),
		"user":                Fingerprint(1793787300000, "u8", 100_000_000, `{"region":"eu"}`),
		"dims":                Fingerprint(1793787300000, "u7", 100_000_000, `{"region":"us"}`),
		"no dims":             Fingerprint(1793787300000, "u7", 100_000_000, `{}`),
		"user/dims boundary":  Fingerprint(1793787300000, `u7{"region":"eu"`, 100_000_000, `}`),
		"time/amount swapped": Fingerprint(100_000_000, "u7", 1793787300000, `{"region":"eu"}`),
	}
	seen := map[uint64]string{base: "base"}
	for name, fp := range others {
		if prev, dup := seen[fp]; dup {
			t.Errorf("fingerprint of %q equals that of %q", name, prev)
		}
		seen[fp] = name
	}
	// The user/dims boundary is what the length prefixes are for.
	if Fingerprint(1, "a", 1, "bc") == Fingerprint(1, "ab", 1, "c") {
		t.Error(`Fingerprint("a","bc") == Fingerprint("ab","c"): field boundaries are ambiguous`)
	}
}

// TestParseFingerprintEquality: the same business content in different
// spellings is one fingerprint (SPEC §4), whatever the event_id or the
// other fields; different content is a different one.
func TestParseFingerprintEquality(t *testing.T) {
	c := DefaultConfig()
	c.Dimensions = []string{"region", "store"}
	fp := func(line string) uint64 {
		t.Helper()
		ev, q := Parse(rec(line), c)
		if q != nil {
			t.Fatalf("Parse(%s) quarantined: %s: %s", line, q.Reason, q.Detail)
		}
		return ev.Fingerprint
	}
	same := []string{
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00","region":"eu","store":1}`,
		`{"event_id":"a2","event_time":"2026-11-04T11:15:00+01:00","user_id":"u7","amount":100,"region":"eu","store":1.0}`,
		`{"event_id":"a3","event_time":"2026-11-04T02:15:00-08:00","user_id":"u7","amount":"100.000000","region":"\u0065u","store":1e0}`,
		`{"event_id":"a4","event_time":1793787300000,"user_id":"u7","amount":1e2,"region":"eu","store":10e-1}`,
		`{"event_id":"a5","event_time":"1793787300000","user_id":"u\u0037","amount":"1e2","region":"eu","store":1,"note":"ignored"}`,
		`{"store":1, "region":"eu", "amount":100.0, "user_id":"u7", "event_time":"2026-11-04T10:15:00.000999Z", "event_id":"a6"}`,
		`{"event_id":"a7","event_time":"2026-11-04T15:45:00+05:30","user_id":"u7","amount":"0.0001e6","region":"eu","store":1}`,
	}
	want := fp(same[0])
	for _, line := range same[1:] {
		if got := fp(line); got != want {
			t.Errorf("fingerprint of\n  %s\n= %016x, want %016x (same content as the first line)", line, got, want)
		}
	}
	different := []string{
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00.001Z","user_id":"u7","amount":"100.00","region":"eu","store":1}`,
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.000001","region":"eu","store":1}`,
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"120.00","region":"eu","store":1}`,
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"U7","amount":"100.00","region":"eu","store":1}`,
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00","region":"EU","store":1}`,
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00","region":"eu","store":"1"}`,
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00","region":"eu"}`,
		`{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"-100.00","region":"eu","store":1}`,
	}
	for _, line := range different {
		if got := fp(line); got == want {
			t.Errorf("fingerprint of\n  %s\nequals the first line's, want different content to differ", line)
		}
	}
}
