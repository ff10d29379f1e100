package sources

import (
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/revenue-stream/hourly/model"
)

// watermarkEstimator holds the watermark a partition's reader last handed to
// the runner (epoch ms, or model.NoWatermark). It is its own state, so a
// checkpoint carries it to the residual. It never decreases: the reader
// advances it at the end of each call, and leaves it alone after a stop.
//
// It does not observe output timestamps: a record's timestamp is the
// watermark before it, which says nothing new.
type watermarkEstimator struct {
	// The SDK reads the estimator from a split request's goroutine too.
	state atomic.Int64
}

func newWatermarkEstimator(state int64) *watermarkEstimator {
	e := &watermarkEstimator{}
	e.state.Store(state)
	return e
}

// CurrentWatermark is the watermark for the runner.
func (e *watermarkEstimator) CurrentWatermark() time.Time {
	return toMtime(e.state.Load()).ToTime()
}

// advance raises the watermark to ms if that is later.
func (e *watermarkEstimator) advance(ms int64) {
	for {
		cur := e.state.Load()
		if ms <= cur || e.state.CompareAndSwap(cur, ms) {
			return
		}
	}
}

// value is the estimator state (epoch ms or model.NoWatermark).
func (e *watermarkEstimator) value() int64 { return e.state.Load() }

// toMtime clamps epoch milliseconds (or model.NoWatermark) to Beam's
// timestamp range.
func toMtime(ms int64) mtime.Time {
	switch {
	case ms == model.NoWatermark || ms < int64(mtime.MinTimestamp):
		return mtime.MinTimestamp
	case ms > int64(mtime.MaxTimestamp):
		return mtime.MaxTimestamp
	}
	return mtime.Time(ms)
}
