package event

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCanonicalDims(t *testing.T) {
	tests := []struct {
		name    string
		fields  string // a JSON object, decoded into map[string]json.RawMessage
		names   []string
		want    string
		wantErr string
	}{
		{"no dimensions", `{"region":"eu"}`, nil, `{}`, ""},
		{"no dimensions, empty slice", `{}`, []string{}, `{}`, ""},
		{"one", `{"region":"eu","x":1}`, []string{"region"}, `{"region":"eu"}`, ""},
		{"sorted keys", `{"sku":"A1","region":"eu","platform":"ios"}`, []string{"sku", "region", "platform"}, `{"platform":"ios","region":"eu","sku":"A1"}`, ""},
		{"byte order, upper case first", `{"b":1,"B":2,"a":3}`, []string{"b", "a", "B"}, `{"B":2,"a":3,"b":1}`, ""},
		{"missing is null", `{"region":"eu"}`, []string{"region", "sku"}, `{"region":"eu","sku":null}`, ""},
		{"explicit null", `{"region":null}`, []string{"region"}, `{"region":null}`, ""},
		{"all missing", `{}`, []string{"b", "a"}, `{"a":null,"b":null}`, ""},
		{"booleans", `{"vip":true,"test":false}`, []string{"vip", "test"}, `{"test":false,"vip":true}`, ""},
		// Numbers by exact value, ECMAScript layout.
		{"1.0 is 1", `{"n":1.0}`, []string{"n"}, `{"n":1}`, ""},
		{"1e0 is 1", `{"n":1e0}`, []string{"n"}, `{"n":1}`, ""},
		{"10e-1 is 1", `{"n":10e-1}`, []string{"n"}, `{"n":1}`, ""},
		{"-0 is 0", `{"n":-0.0}`, []string{"n"}, `{"n":0}`, ""},
		{"negative fraction", `{"n":-12.50}`, []string{"n"}, `{"n":-12.5}`, ""},
		{"1e20 plain", `{"n":1e20}`, []string{"n"}, `{"n":100000000000000000000}`, ""},
		{"1e21 exponent", `{"n":1e21}`, []string{"n"}, `{"n":1e+21}`, ""},
		{"1.5e300", `{"n":15e299}`, []string{"n"}, `{"n":1.5e+300}`, ""},
		{"0.000001 plain", `{"n":1e-6}`, []string{"n"}, `{"n":0.000001}`, ""},
		{"1e-7 exponent", `{"n":0.0000001}`, []string{"n"}, `{"n":1e-7}`, ""},
		{"-1.25e-7", `{"n":-0.000000125}`, []string{"n"}, `{"n":-1.25e-7}`, ""},
		{"long id keeps every digit", `{"n":12345678901234567890123}`, []string{"n"}, `{"n":1.2345678901234567890123e+22}`, ""},
		{"20-digit id plain", `{"n":12345678901234567890}`, []string{"n"}, `{"n":12345678901234567890}`, ""},
		// Strings: decoded, then re-escaped minimally.
		{"unicode escape", `{"city":"M\u00fcnchen"}`, []string{"city"}, `{"city":"München"}`, ""},
		{"surrogate pair", `{"e":"\ud83d\ude00"}`, []string{"e"}, `{"e":"😀"}`, ""},
		{"escaped slash", `{"p":"a\/b"}`, []string{"p"}, `{"p":"a/b"}`, ""},
		{"kept escapes", `{"s":"q\"b\\t\u0009n\u000a"}`, []string{"s"}, `{"s":"q\"b\\t\tn\n"}`, ""},
		{"control as \\u00xx", `{"s":"\u001f\u0000"}`, []string{"s"}, `{"s":"\u001f\u0000"}`, ""},
		{"html kept raw", `{"s":"<a&b>"}`, []string{"s"}, `{"s":"<a&b>"}`, ""},
		{"escaped key matches", `{"r\u0065gion":"eu"}`, []string{"region"}, `{"region":"eu"}`, ""},
		{"dimension name escaped", `{"a\"b":1}`, []string{`a"b`}, `{"a\"b":1}`, ""},
		// Nested values are re-encoded recursively.
		{"nested", `{"d":{ "b" : 1 , "a" : [ 1.0 , {"d":true,"c":null} , "x" ] }}`, []string{"d"}, `{"d":{"a":[1,{"c":null,"d":true},"x"],"b":1}}`, ""},
		{"empty containers", `{"o":{},"a":[ ]}`, []string{"o", "a"}, `{"a":[],"o":{}}`, ""},
		{"string with brackets", `{"o":{"k":"}]","j":["[{"]}}`, []string{"o"}, `{"o":{"j":["[{"],"k":"}]"}}`, ""},
		// Errors.
		{"duplicate name", `{}`, []string{"a", "a"}, "", `dimension "a" listed twice`},
		{"empty name", `{}`, []string{""}, "", "must be non-empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.fields), &fields); err != nil {
				t.Fatalf("test input: %v", err)
			}
			got, err := CanonicalDims(fields, tt.names)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CanonicalDims = %q, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("CanonicalDims = %s, %v\n                  want %s", got, err, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("CanonicalDims = %s is not valid JSON", got)
			}
			// Canonical is a fixed point.
			var again map[string]json.RawMessage
			if err := json.Unmarshal([]byte(got), &again); err != nil {
				t.Fatal(err)
			}
			if got2, err := CanonicalDims(again, tt.names); err != nil || got2 != got {
				t.Fatalf("CanonicalDims(CanonicalDims) = %s, %v; want %s", got2, err, got)
			}
		})
	}
}

func TestCanonicalDimsRejectsInvalidValues(t *testing.T) {
	for _, raw := range []string{`{"a":1,"a":2}`, `tru`, `01`, `"\ud800"`, "\"\xff\"", `[1,]`, `{"a":1}x`, ``} {
		fields := map[string]json.RawMessage{"d": json.RawMessage(raw)}
		if got, err := CanonicalDims(fields, []string{"d"}); err == nil {
			t.Errorf("CanonicalDims(d=%q) = %q, nil; want an error", raw, got)
		}
	}
}

func TestCanonicalDimsDoesNotReorderCallerSlice(t *testing.T) {
	names := []string{"sku", "region"}
	if _, err := CanonicalDims(nil, names); err != nil {
		t.Fatal(err)
	}
	if names[0] != "sku" || names[1] != "region" {
		t.Fatalf("CanonicalDims sorted the caller's slice: %q", names)
	}
}
