package sdfread

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/revenue-stream/hourly/model"
)

func TestWatermarkEstimator(t *testing.T) {
	e := NewWatermarkEstimator(model.NoWatermark)
	if got := mtime.FromTime(e.CurrentWatermark()); got != mtime.MinTimestamp {
		t.Fatalf("initial watermark %v, want the minimum timestamp", got)
	}
	e.Advance(1_000)
	e.Advance(500) // never decreases
	if e.Value() != 1_000 || mtime.FromTime(e.CurrentWatermark()) != mtime.Time(1_000) {
		t.Errorf("watermark %d / %v, want 1000", e.Value(), e.CurrentWatermark())
	}
	// A residual resumes from the state.
	if r := NewWatermarkEstimator(e.Value()); r.Value() != 1_000 {
		t.Errorf("restored %d", r.Value())
	}
	if ToMtime(int64(mtime.MaxTimestamp)+1) != mtime.MaxTimestamp || ToMtime(int64(mtime.MinTimestamp)-1) != mtime.MinTimestamp {
		t.Error("ToMtime does not clamp")
	}
}
