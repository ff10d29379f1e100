package pipeline_test

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/teststream"
	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/testing/scenario"
)

// TestReleaseAtTheCloseReachesTheWindowBeforeFinal: in position order a
// dedup shard holds a batch until the watermark passes its timestamp (its
// partition's watermark before it). B (window [10:00, 11:00) of 11-04,
// closing 11-05 11:00) comes when p0's watermark is 11-05 10:59:59.999: not
// too late, held, released by a timer at 11-05 11:00:00.000, the instant of
// the revision step's FINAL timer. The watermark stops there for a while.
// B must reach its window before FINAL: the FINAL row has A and B.
//
// Before, the release timer held the shard's output at its firing time,
// 11:00:00.000: prism fires a timer once the watermark reaches it, so the
// revision step's FINAL fired with B still on its way, and B (counted) was
// dropped after the FINAL row (invariant_data_after_final 1, conservation
// of the rows broken).
func TestReleaseAtTheCloseReachesTheWindowBeforeFinal(t *testing.T) {
	o := pipeline.Defaults()
	o.Triggers.Early = 0
	o.DedupOrder = pipeline.OrderPosition
	sc := scenario.New(o.Watermark, o.Event, readAt)
	sc.Purchase("p0", "A", "2026-11-04T10:15:00Z", "u1", "100").
		Purchase("p0", "X", "2026-11-05T11:09:59.999Z", "u2", "1").
		Purchase("p0", "B", "2026-11-04T10:30:00Z", "u3", "20")
	recs := sc.Records
	if got := recs[2].WatermarkBefore; got != ms("2026-11-05T10:59:59.999Z") {
		t.Fatalf("B's watermark before = %d, want the close less 1 ms", got)
	}
	for i := range 3 {
		res := runFrom(t, func(s beam.Scope) beam.PCollection {
			cfg := teststream.NewConfig()
			for _, r := range recs {
				if err := cfg.AddElements(max(r.WatermarkBefore, int64(mtime.MinTimestamp)), coders.EncodeRecord(r)); err != nil {
					panic(err)
				}
			}
			for _, w := range []string{"2026-11-04T12:00:00Z", "2026-11-05T11:00:00Z"} {
				if err := cfg.AdvanceWatermark(ms(w)); err != nil {
					panic(err)
				}
			}
			cfg.AdvanceProcessingTime(1) // the watermark waits at the close
			if err := cfg.AdvanceWatermarkToInfinity(); err != nil {
				panic(err)
			}
			return scenario.DecodeRecords(s, teststream.Create(s, cfg))
		}, len(recs), o)
		var final model.Row
		for _, r := range res.rows.Values() {
			if r.WindowStart == ms("2026-11-04T10:00:00Z") && r.State == model.Final {
				final = r
			}
		}
		if final.EventCount != 2 || final.RevenueMicros != 120e6 {
			t.Fatalf("run %d: FINAL of 11-04 10:00 = %+v, want 120 of 2 events; rows\n%s", i, final, table(res.rows.Values()))
		}
	}
}
