package event

import (
	"strings"
	"testing"
)

func TestParseAmount(t *testing.T) {
	const (
		tooPrecise = "more than 6 fractional digits"
		tooLarge   = "less than 1e12"
		notNumber  = "not a decimal number"
	)
	tests := []struct {
		raw     string // the JSON token
		want    int64
		wantErr string // substring; "" means valid
	}{
		// The forms of SPEC §3, all exact.
		{`"100.00"`, 100_000_000, ""},
		{`100`, 100_000_000, ""},
		{`"100"`, 100_000_000, ""},
		{`"100.0"`, 100_000_000, ""},
		{`"100.000000"`, 100_000_000, ""},
		{`1e2`, 100_000_000, ""},
		{`"1e2"`, 100_000_000, ""},
		{`1E+2`, 100_000_000, ""},
		{`10000e-2`, 100_000_000, ""},
		{`100.10`, 100_100_000, ""}, // 100.1 is not exact in float64; here it is
		{`0.1`, 100_000, ""},
		{`"0.29"`, 290_000, ""},
		{`1.5E-3`, 1_500, ""},
		{`"1.5e-3"`, 1_500, ""},
		{`-3.5`, -3_500_000, ""}, // refunds are negative
		{`"-25.50"`, -25_500_000, ""},
		{`0`, 0, ""},
		{`"-0"`, 0, ""},
		{`-0.0`, 0, ""},
		{`"0e999999999"`, 0, ""},
		{` 7 `, 7_000_000, ""}, // whitespace around the token is JSON, not content
		// Exactly 6 fractional digits, and zeros beyond 6.
		{`"0.000001"`, 1, ""},
		{`"-0.000001"`, -1, ""},
		{`"1.2300000"`, 1_230_000, ""},
		{`"1.000000000000000000000000000000"`, 1_000_000, ""},
		{`1e-6`, 1, ""},
		{`"1.0000001"`, 0, tooPrecise},
		{`"0.0000001"`, 0, tooPrecise},
		{`1e-7`, 0, tooPrecise},
		{`1.5e-6`, 0, tooPrecise},
		{`"1e-999999999999999999999"`, 0, tooPrecise},
		// |amount| < 1e12: just below and at the bound.
		{`"999999999999.999999"`, 999_999_999_999_999_999, ""},
		{`"-999999999999.999999"`, -999_999_999_999_999_999, ""},
		{`9.99999999999999999e11`, 999_999_999_999_999_999, ""},
		{`"1000000000000"`, 0, tooLarge},
		{`1e12`, 0, tooLarge},
		{`-1e12`, 0, tooLarge},
		{`"1000000000000.000000"`, 0, tooLarge},
		{`"99999999999999999999999999"`, 0, tooLarge},
		{`1e999999999999999999999`, 0, tooLarge},
		{`"999999999999.9999999"`, 0, tooPrecise},
		// Escapes are JSON, so the string's value is what counts.
		{`"\u0031\u0030"`, 10_000_000, ""},
		// Not a JSON number literal inside the string.
		{`"+1"`, 0, notNumber},
		{`"00.1"`, 0, notNumber},
		{`"007"`, 0, notNumber},
		{`".5"`, 0, notNumber},
		{`"5."`, 0, notNumber},
		{`"1e"`, 0, notNumber},
		{`"0x10"`, 0, notNumber},
		{`"NaN"`, 0, notNumber},
		{`"Infinity"`, 0, notNumber},
		{`"-Infinity"`, 0, notNumber},
		{`" 1"`, 0, notNumber},
		{`"1 "`, 0, notNumber},
		{`""`, 0, notNumber},
		{`"1,000.00"`, 0, notNumber},
		{`"1_000"`, 0, notNumber},
		{`"１"`, 0, notNumber}, // full-width digit
		{`"$5"`, 0, notNumber},
		// Invalid JSON tokens and other types.
		{`+1`, 0, "decimal string or a JSON number, got an invalid value"},
		{`01`, 0, notNumber},
		{`1.`, 0, notNumber},
		{`NaN`, 0, "got an invalid value"},
		{`true`, 0, "got a boolean"},
		{`null`, 0, "got null"},
		{`[1]`, 0, "got an array"},
		{`{"v":1}`, 0, "got an object"},
		{``, 0, "got nothing"},
		{`"1`, 0, "unterminated string"},
		{`"1"x`, 0, "unexpected data after"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseAmount([]byte(tt.raw))
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseAmount(%s) = %d, %v; want %d, nil", tt.raw, got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseAmount(%s) = %d, %v; want error containing %q", tt.raw, got, err, tt.wantErr)
			}
		})
	}
}

func TestParseAmountLongInputIsLinear(t *testing.T) {
	// A 1 MiB digit string must be judged, not hang or overflow.
	long := `"0.` + strings.Repeat("0", 1<<20) + `"`
	if got, err := ParseAmount([]byte(long)); err != nil || got != 0 {
		t.Fatalf("ParseAmount(0.000...) = %d, %v; want 0, nil", got, err)
	}
	long = `"1` + strings.Repeat("0", 1<<20) + `"`
	if _, err := ParseAmount([]byte(long)); err == nil {
		t.Fatal("ParseAmount(1000...) = nil error, want out of range")
	}
}
