package event

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// utcMs is the expected value, computed independently with package time.
func utcMs(y int, mo time.Month, d, h, mi, s, ms int) int64 {
	return time.Date(y, mo, d, h, mi, s, ms*int(time.Millisecond), time.UTC).UnixMilli()
}

func TestEventTimeBounds(t *testing.T) {
	if want := utcMs(0, 1, 1, 0, 0, 0, 0); MinEventTime != want {
		t.Errorf("MinEventTime = %d, want %d (0000-01-01T00:00:00Z)", MinEventTime, want)
	}
	if want := utcMs(9999, 12, 31, 23, 59, 59, 999); MaxEventTime != want {
		t.Errorf("MaxEventTime = %d, want %d (9999-12-31T23:59:59.999Z)", MaxEventTime, want)
	}
}

func TestParseEventTime(t *testing.T) {
	t0 := utcMs(2026, 11, 4, 10, 15, 0, 0) // SPEC §3 example, 1793787300000
	n := func(ms int64) string { return strconv.FormatInt(ms, 10) }
	tests := []struct {
		raw     string
		want    int64
		wantErr string // substring; "" means valid
	}{
		// One instant, many spellings.
		{`"2026-11-04T10:15:00Z"`, t0, ""},
		{`"2026-11-04T11:15:00+01:00"`, t0, ""},
		{`"2026-11-04T15:45:00+05:30"`, t0, ""},
		{`"2026-11-04T02:15:00-08:00"`, t0, ""},
		{`"2026-11-04T10:15:00-00:00"`, t0, ""}, // RFC 3339 "unknown offset" is UTC
		{`"2026-11-04t10:15:00z"`, t0, ""},
		{`"2026-11-04 10:15:00Z"`, t0, ""},
		{`"2026-11-04T10:15:00.000Z"`, t0, ""},
		{n(t0), t0, ""},
		{`"` + n(t0) + `"`, t0, ""},
		{`1.7937873e12`, t0, ""},
		{` ` + n(t0) + ` `, t0, ""},
		// Offsets move the date too.
		{`"2026-11-05T00:10:00+14:00"`, utcMs(2026, 11, 4, 10, 10, 0, 0), ""},
		{`"2026-11-03T23:59:00-23:59"`, utcMs(2026, 11, 4, 23, 58, 0, 0), ""},
		// Sub-millisecond digits are truncated, never rounded.
		{`"2026-11-04T10:15:00.1Z"`, t0 + 100, ""},
		{`"2026-11-04T10:15:00.12Z"`, t0 + 120, ""},
		{`"2026-11-04T10:15:00.123Z"`, t0 + 123, ""},
		{`"2026-11-04T10:15:00.123456789Z"`, t0 + 123, ""},
		{`"2026-11-04T10:15:00.9999999999999Z"`, t0 + 999, ""},
		{`"2026-11-04T11:15:00.9996+01:00"`, t0 + 999, ""},
		{n(t0) + `.9`, t0, ""},
		{`"` + n(t0) + `.999"`, t0, ""},
		// Before 1970 the instant is floored too (towards the past).
		{`"1969-12-31T23:59:59.9995Z"`, -1, ""},
		{`"1969-12-31T23:59:59.999Z"`, -1, ""},
		{`"1969-12-31T23:59:59.0001Z"`, -1000, ""},
		{`"1969-12-31T23:59:58.5Z"`, -1500, ""},
		{`"1970-01-01T00:00:00.0009Z"`, 0, ""},
		{`"1900-01-01T00:00:00Z"`, utcMs(1900, 1, 1, 0, 0, 0, 0), ""},
		{`-0.5`, -1, ""},
		{`-1.5`, -2, ""},
		{`-1`, -1, ""},
		{`-0`, 0, ""},
		{`0`, 0, ""},
		{`1.9`, 1, ""},
		{`"-1500.25"`, -1501, ""},
		// Calendar edges.
		{`"2024-02-29T00:00:00Z"`, utcMs(2024, 2, 29, 0, 0, 0, 0), ""},
		{`"2000-02-29T12:00:00Z"`, utcMs(2000, 2, 29, 12, 0, 0, 0), ""},
		{`"2016-12-31T23:59:60Z"`, utcMs(2016, 12, 31, 23, 59, 59, 999), ""}, // leap second stays in its minute
		{`"2016-12-31T23:59:60.5Z"`, utcMs(2016, 12, 31, 23, 59, 59, 999), ""},
		{`"0000-01-01T00:00:00Z"`, MinEventTime, ""},
		{`"9999-12-31T23:59:59.999999Z"`, MaxEventTime, ""},
		{n(MinEventTime), MinEventTime, ""},
		{n(MaxEventTime), MaxEventTime, ""},
		// Out of range.
		{n(MaxEventTime + 1), 0, "outside years 0000-9999"},
		{n(MinEventTime - 1), 0, "outside years 0000-9999"},
		{`1e400`, 0, "outside years 0000-9999"},
		{`-1e400`, 0, "outside years 0000-9999"},
		{`"9999-12-31T23:59:59-00:01"`, 0, "outside years 0000-9999"},
		{`"0000-01-01T00:00:00+00:01"`, 0, "outside years 0000-9999"},
		// Not RFC 3339.
		{`"2026-02-29T00:00:00Z"`, 0, "no such date"},
		{`"1900-02-29T00:00:00Z"`, 0, "no such date"},
		{`"2026-04-31T00:00:00Z"`, 0, "no such date"},
		{`"2026-13-01T00:00:00Z"`, 0, "no such date"},
		{`"2026-00-01T00:00:00Z"`, 0, "no such date"},
		{`"2026-11-04T24:00:00Z"`, 0, "no such time of day"},
		{`"2026-11-04T10:60:00Z"`, 0, "no such time of day"},
		{`"2026-11-04T10:15:61Z"`, 0, "no such time of day"},
		{`"2026-11-04T10:15:00"`, 0, "missing time zone offset"},
		{`"2026-11-04T10:15:00.123"`, 0, "missing time zone offset"},
		{`"2026-11-04T10:15:00+0100"`, 0, "want offset"},
		{`"2026-11-04T10:15:00+01"`, 0, "want offset"},
		{`"2026-11-04T10:15:00+24:00"`, 0, "offset out of range"},
		{`"2026-11-04T10:15:00+01:60"`, 0, "offset out of range"},
		{`"2026-11-04T10:15:00.Z"`, 0, "empty fraction"},
		{`"2026-11-04T10:15:00,5Z"`, 0, "want Z or ±hh:mm"},
		{`"2026-11-04T10:15:00Z "`, 0, "unexpected text after the offset"},
		{`"2026-11-04T10:15:00ZZ"`, 0, "unexpected text after the offset"},
		{`"2026-11-04X10:15:00Z"`, 0, "between date and time"},
		{`"2026-11-4T10:15:00Z"`, 0, "want YYYY-MM-DDThh:mm:ss"},
		{`"26-11-04T10:15:00Z"`, 0, "want YYYY-MM-DDThh:mm:ss"},
		{`"+2026-11-04T10:15:00Z"`, 0, "want YYYY-MM-DDThh:mm:ss"},
		{`"2026-11-04"`, 0, "want YYYY-MM-DDThh:mm:ss"},
		{`"10:15"`, 0, "want YYYY-MM-DDThh:mm:ss"},
		{`"yesterday"`, 0, "want YYYY-MM-DDThh:mm:ss"},
		{`""`, 0, "want YYYY-MM-DDThh:mm:ss"},
		{`" 2026-11-04T10:15:00Z"`, 0, "not RFC 3339"},
		{`"+1793787300000"`, 0, "not RFC 3339"},
		{`"0x1A"`, 0, "not RFC 3339"},
		{`"NaN"`, 0, "not RFC 3339"},
		// Other JSON types.
		{`+1793787300000`, 0, "got an invalid value"},
		{`01`, 0, "not a number"},
		{`true`, 0, "got a boolean"},
		{`null`, 0, "got null"},
		{`{"ms":1}`, 0, "got an object"},
		{`[1]`, 0, "got an array"},
		{``, 0, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseEventTime([]byte(tt.raw))
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseEventTime(%s) = %d, %v; want %d (%s), nil",
						tt.raw, got, err, tt.want, time.UnixMilli(tt.want).UTC().Format(time.RFC3339Nano))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseEventTime(%s) = %d, %v; want error containing %q", tt.raw, got, err, tt.wantErr)
			}
		})
	}
}

// TestParseEventTimeMatchesPackageTime cross-checks the hand-written RFC 3339
// parser against time.Parse over many instants and offsets, including before
// 1970, where flooring matters.
func TestParseEventTimeMatchesPackageTime(t *testing.T) {
	offsets := []string{"Z", "+00:00", "+05:30", "-08:00", "+14:00", "-12:00", "+00:01"}
	fracs := []string{"", ".5", ".123", ".123456", ".999999999"}
	for y := 1; y <= 9998; y += 97 {
		for _, mo := range []int{1, 2, 3, 12} {
			for _, off := range offsets {
				for _, fr := range fracs {
					s := time.Date(y, time.Month(mo), 28, 23, 59, 59, 0, time.UTC).Format("2006-01-02T15:04:05") + fr + off
					want, err := time.Parse(time.RFC3339Nano, s)
					if err != nil {
						t.Fatalf("time.Parse(%q): %v", s, err)
					}
					got, err := ParseEventTime([]byte(`"` + s + `"`))
					if err != nil || got != want.UnixMilli() {
						t.Fatalf("ParseEventTime(%q) = %d, %v; want %d", s, got, err, want.UnixMilli())
					}
				}
			}
		}
	}
}
