package event_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
)

func ExampleParse() {
	c := event.DefaultConfig()
	c.Dimensions = []string{"region"}
	if err := c.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	readAt := time.Date(2026, 11, 4, 10, 20, 0, 0, time.UTC).UnixMilli()
	for _, line := range []string{
		`{"event_id":"a1","event_time":"2026-11-04T11:15:00+01:00","user_id":"u7","amount":"100.00","region":"eu"}`,
		`{"event_id":"a1","event_time":1793787300000,"user_id":"u7","amount":1e2,"region":"\u0065u"}`,
		`{"event_id":"a2","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"1.0000001"}`,
	} {
		r := model.Record{Position: "p0/a.jsonl:1", Line: []byte(line), ReadAt: readAt, WatermarkBefore: model.NoWatermark}
		ev, q := event.Parse(r, c)
		if q != nil {
			fmt.Printf("quarantined %s: %s\n", q.Reason, q.Detail)
			continue
		}
		fmt.Printf("%s %s %s %s %s\n", ev.EventID, model.FormatTime(ev.EventTime), model.FormatMicros(ev.AmountMicros), ev.Dims, model.FingerprintHex(ev.Fingerprint))
	}
	// Output:
	// a1 2026-11-04T10:15:00Z 100.000000 {"region":"eu"} a384c17a9449dfc3
	// a1 2026-11-04T10:15:00Z 100.000000 {"region":"eu"} a384c17a9449dfc3
	// quarantined bad_amount: amount "1.0000001": more than 6 fractional digits
}

func ExampleParseAmount() {
	for _, raw := range []string{`"100.00"`, `100.10`, `1.5E-3`, `"-25.5"`, `"1.0000001"`, `"+1"`} {
		micros, err := event.ParseAmount([]byte(raw))
		fmt.Println(raw, micros, err)
	}
	// Output:
	// "100.00" 100000000 <nil>
	// 100.10 100100000 <nil>
	// 1.5E-3 1500 <nil>
	// "-25.5" -25500000 <nil>
	// "1.0000001" 0 amount "1.0000001": more than 6 fractional digits
	// "+1" 0 amount "+1": not a decimal number
}

func ExampleCanonicalDims() {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{"region":"eu","store":1.0,"note":"x"}`), &fields); err != nil {
		fmt.Println(err)
		return
	}
	dims, err := event.CanonicalDims(fields, []string{"store", "region", "platform"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dims)
	// Output:
	// {"platform":null,"region":"eu","store":1}
}
