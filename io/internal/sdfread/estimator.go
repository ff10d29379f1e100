package sdfread

import (
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/revenue-stream/hourly/model"
)

// WatermarkEstimator holds the watermark a reader (a folder partition, or the
// Pub/Sub source) last handed to the runner (epoch ms, or
// model.NoWatermark), as in Beam's natsio: a manual estimator whose state is
// its value, so a checkpoint carries it to the residual. It never decreases:
// the reader advances it at the end of each call, and leaves it alone after
// a stop.
//
// It does not observe output timestamps: a record's timestamp is the
// watermark before it, which says nothing new.
type WatermarkEstimator struct {
	// The SDK reads the estimator from a split request's goroutine too.
	state atomic.Int64
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
