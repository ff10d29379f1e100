package event

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestScanAgreesWithEncodingJSON: the hand-written scanner accepts exactly
// what encoding/json accepts, except where the package doc makes it
// stricter (duplicate keys, invalid UTF-8, lone surrogates, depth).
func TestScanAgreesWithEncodingJSON(t *testing.T) {
	same := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e+3`, `1E-3`, `true`, `false`, `null`,
		`{"a":[1,{"b":null}],"c":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"}`,
		" \t\n\r{ \"a\" : [ 1 , 2 ] } \r\n",
		`{"a":1,"b":{"a":1}}`, // the same key in different objects is fine
		`[` + strings.Repeat(`[`, 127) + strings.Repeat(`]`, 127) + `]`,
		// Invalid for both.
		``, ` `, `{`, `}`, `[`, `]`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{a:1}`, `{"a":1,}`, `[1,]`, `[,1]`,
		`{"a":1 "b":2}`, `[1 2]`, `01`, `-`, `1.`, `.1`, `1e`, `1e+`, `+1`, `0x1`, `NaN`, `Infinity`,
		`tru`, `nul`, `falsey`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, `"a` + "\x01" + `"`, `{} {}`, `1 2`,
		`'a'`, `{"a":1}}`, `[1]]`, `"\`,
	}
	for _, in := range same {
		if got, want := scanValue([]byte(in)) == nil, json.Valid([]byte(in)); got != want {
			t.Errorf("scan(%q) valid = %v, encoding/json says %v", in, got, want)
		}
	}
	stricter := map[string]string{
		`{"a":1,"a":2}`:       "duplicate key",
		`{"a":{"x":1,"x":1}}`: "duplicate key",
		`{"a":1,"\u0061":2}`:  "duplicate key",
		"\"\xff\"":            "invalid UTF-8",
		"\"\xc3\"":            "invalid UTF-8",
		"\"\xed\xa0\x80\"":    "invalid UTF-8", // a surrogate encoded in UTF-8
		`"\ud800"`:            "lone surrogate",
		`"\udc00"`:            "lone surrogate",
		`"\ud800\u0041"`:      "lone surrogate",
		`"\ud800x"`:           "lone surrogate",
		strings.Repeat(`[`, 129) + strings.Repeat(`]`, 129): "nesting deeper than 128",
	}
	for in, why := range stricter {
		if !json.Valid([]byte(in)) {
			t.Errorf("test premise: encoding/json rejects %q", in)
		}
		if err := scanValue([]byte(in)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("scan(%q) = %v, want an error containing %q", in, err, why)
		}
	}
}

func TestScanDuplicateKeysInLargeObjects(t *testing.T) {
	// Past dupMapThreshold keys the check switches to a map; both sides of
	// the switch must find duplicates.
	for _, n := range []int{dupMapThreshold - 1, dupMapThreshold, dupMapThreshold + 1, 3 * dupMapThreshold} {
		var keys []string
		for i := 0; i < n; i++ {
			keys = append(keys, `"k`+strings.Repeat("x", i)+`":1`)
		}
		obj := "{" + strings.Join(keys, ",") + "}"
		if err := scanValue([]byte(obj)); err != nil {
			t.Fatalf("%d distinct keys: %v", n, err)
		}
		for _, dup := range []int{0, n / 2, n - 1} {
			bad := "{" + strings.Join(keys, ",") + `,"k` + strings.Repeat("x", dup) + `":2}`
			if err := scanValue([]byte(bad)); err == nil || !strings.Contains(err.Error(), "duplicate key") {
				t.Errorf("%d keys, duplicate of key %d: err = %v", n+1, dup, err)
			}
		}
	}
}

func TestUnescapeAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u0000\u001f\u007f"`, `"\u00e9\u00E9"`, `"\uD83D\uDE00 \ud83d\ude00"`,
		`"a\u0062c"`, `"é😀"`, `"\uffff\u0800\u07ff"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		got, err := stringToken([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("stringToken(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestSatAdd(t *testing.T) {
	tests := []struct{ a, b, want int64 }{
		{1, 2, 3},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64 - 5, 600_000, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MinInt64 + 1, -3_600_000, math.MinInt64},
		{-5, 5, 0},
	}
	for _, tt := range tests {
		if got := SatAdd(tt.a, tt.b); got != tt.want {
			t.Errorf("SatAdd(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
