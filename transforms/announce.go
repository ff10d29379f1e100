package transforms

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/triggers"
)

func init() {
	register.DoFn5x1[context.Context, state.Provider, int64, int64, func(int, model.EventBatch), error](&announceFn{})
	register.Emitter2[int, model.EventBatch]()
}

// AnnounceWindows tells every key of the watermark gate about every window
// with data, so that each key arms its timers: else a record on a key that saw
// none of its window could reach a FINAL window, or start it ON_TIME not LATE.
//
// windows holds KV<window start, earliest timestamp> per window of a bundle.
// An announcement carries that timestamp, holding the gate's watermark until
// every key armed the window; it repeats only when needed (mustFanOut).
func AnnounceWindows(s beam.Scope, windows beam.PCollection, keys int, p triggers.Policy, boundMs int64) beam.PCollection {
	s = s.Scope("AnnounceWindows")
	return beam.ParDo(s, &announceFn{
		Keys:    keys,
		Policy:  p,
		BoundMs: boundMs,
		Lowest:  state.MakeValueState[int64]("lowest"),
	}, windows)
}

type announceFn struct {
	Keys    int
	Policy  triggers.Policy
	BoundMs int64
	Lowest  state.Value[int64] // the lowest timestamp announced at

	fanOuts beam.Counter
}

func (f *announceFn) Setup() { f.fanOuts = metrics.Counter(metrics.WindowFanOuts) }

func (f *announceFn) ProcessElement(ctx context.Context, sp state.Provider, start, ts int64, emit func(int, model.EventBatch)) error {
	lowest, announced, err := f.Lowest.Read(sp)
	if err != nil {
		return fmt.Errorf("announce %d: read state: %w", start, err)
	}
	if !mustFanOut(f.Policy, start, f.BoundMs, ts, lowest, announced) {
		return nil
	}
	if err := f.Lowest.Write(sp, ts); err != nil {
		return fmt.Errorf("announce %d: write state: %w", start, err)
	}
	f.fanOuts.Inc(ctx, 1)
	windows := []int64{start}
	for key := range f.Keys {
		emit(key, model.EventBatch{Windows: windows})
	}
	return nil
}

// mustFanOut reports whether an element of window start at ts must be
// announced again after one at lowest: when a boundary lies in (ts, lowest],
// which the earlier announcement did not hold. At most 1 + 2·(maxGapWindows+1)
// announcements a window.
func mustFanOut(p triggers.Policy, start, boundMs, ts, lowest int64, announced bool) bool {
	if !announced {
		return true
	}
	if ts >= lowest {
		return false
	}
	return slices.ContainsFunc(windowsToArm(p, start, boundMs, model.NoWatermark), func(s int64) bool {
		end, closed := p.WindowEnd(s), p.CloseTime(s)
		return ts < end && end <= lowest || ts < closed && closed <= lowest
	})
}
