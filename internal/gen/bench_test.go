package gen_test

import (
	"path/filepath"
	"testing"

	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// The benchmarks' log (oracle.BenchLog) is a valid Config.
func TestBenchLogValid(t *testing.T) {
	if c := oracle.BenchLog(1000); c.Validate() != nil {
		t.Errorf("%+v: %v", c, c.Validate())
	}
}

func BenchmarkGenerate1M(b *testing.B) {
	const n = 1_000_000
	c := oracle.BenchLog(n)
	var st gen.Stats
	for b.Loop() {
		var err error
		st, err = gen.Write(filepath.Join(b.TempDir(), "log"), c)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(st.Lines), "lines")
}
