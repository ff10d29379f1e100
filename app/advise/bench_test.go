package advise

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAnalyze is the advisor on a generated log of 9 partitions and
// about 41,000 records (the figures test's shape, the demo's size), with
// the default candidates: reading, every replay and the recommendation's
// search.
//
//	go test ./app/advise -run '^$' -bench Analyze -benchmem -count 5
func BenchmarkAnalyze(b *testing.B) {
	dir, recs := writeGenLog(b, genConfig{start: genStart, partitions: 9, step: 20 * time.Second, slots: 4000, silent: 1,
		silentFrom: 4*time.Hour + 25*time.Minute, silentTo: 5*time.Hour + 12*time.Minute, copies: true, tail: true})
	o := Defaults()
	o.Source, o.ArrivalField, o.Segments = dir, "received_at", []string{"region"}
	o.Now = genStart.Add(60 * 24 * time.Hour)
	b.ReportMetric(float64(len(recs)), "records")
	b.ResetTimer()
	for b.Loop() {
		if _, err := Analyze(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}
