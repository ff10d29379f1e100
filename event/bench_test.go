package event

import (
	"testing"

	"github.com/revenue-stream/hourly/model"
)

// BenchmarkParse measures the hot path of the Validate transform. The
// pipeline target is 100,000 events/s on 2 cores, so Parse must stay a small
// fraction of the 20 µs per event that leaves per core.
func BenchmarkParse(b *testing.B) {
	cases := []struct {
		name string
		line string
		dims []string
	}{
		{"spec_example", `{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"100.00"}`, nil},
		{"realistic_2_dims", `{"event_id":"0f8e2c1a-6d4b-4f3e-9a57-2b1c9d0e7f63","event_time":"2026-11-04T11:15:00.123+01:00","user_id":"user-184467","amount":"19.99","region":"eu-west","platform":"ios","app_version":"5.12.0","items":[{"sku":"A-1","qty":1}]}`, []string{"region", "platform"}},
		{"epoch_number_amount", `{"event_id":"a1","event_time":1793787300000,"user_id":"u7","amount":100.10}`, nil},
		{"quarantine_bad_amount", `{"event_id":"a1","event_time":"2026-11-04T10:15:00Z","user_id":"u7","amount":"1.0000001"}`, nil},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			c := DefaultConfig()
			c.Dimensions = tc.dims
			if err := c.Validate(); err != nil {
				b.Fatal(err)
			}
			r := model.Record{Partition: "p0", Position: "p0/f.jsonl:1", Line: []byte(tc.line), ReadAt: readAt, WatermarkBefore: model.NoWatermark}
			b.SetBytes(int64(len(r.Line)))
			b.ReportAllocs()
			for b.Loop() {
				Parse(r, c)
			}
		})
	}
}
