package sdfread

import (
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/revenue-stream/hourly/model"
)

// WatermarkEstimator holds the watermark a reader last handed to the runner
// (epoch ms, or model.NoWatermark): a manual estimator whose state is its
// value, as in Beam's natsio. It never decreases.
type WatermarkEstimator struct {
	state atomic.Int64 // read from a split request's goroutine too
}

func NewWatermarkEstimator(state int64) *WatermarkEstimator {
	e := &WatermarkEstimator{}
	e.state.Store(state)
	return e
}

// CurrentWatermark is the watermark for the runner.
func (e *WatermarkEstimator) CurrentWatermark() time.Time {
	return ToMtime(e.state.Load()).ToTime()
}

// Advance raises the watermark to ms if that is later.
func (e *WatermarkEstimator) Advance(ms int64) {
	for {
		cur := e.state.Load()
		if ms <= cur || e.state.CompareAndSwap(cur, ms) {
			return
		}
	}
}

// Value is the estimator state (epoch ms or model.NoWatermark).
func (e *WatermarkEstimator) Value() int64 { return e.state.Load() }

// ToMtime clamps epoch milliseconds (or model.NoWatermark) to Beam's
// timestamp range.
func ToMtime(ms int64) mtime.Time {
	switch {
	case ms == model.NoWatermark || ms < int64(mtime.MinTimestamp):
		return mtime.MinTimestamp
	case ms > int64(mtime.MaxTimestamp):
		return mtime.MaxTimestamp
	}
	return mtime.Time(ms)
}
