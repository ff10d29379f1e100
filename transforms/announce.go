package transforms

import (
	"context"
	"fmt"

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
// with data (issue #12), so that each key arms the timers of every window:
// otherwise a returning partition's record on a key that saw none of its
// window would be counted into a window already FINAL, or start it ON_TIME
// instead of LATE.
//
// windows holds KV<window start, timestamp> per window of a source bundle,
// stamped with the earliest timestamp of its events there (below the
// window's close, rule (a)). Keyed by window, the step remembers the lowest
// timestamp it announced at, and announces again only when a later element
// comes lower across a boundary (mustFanOut). An announcement carries that
// timestamp, so it holds the gate's watermark, and the revision step's,
// until every key armed the window: FINAL cannot come before.
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
	// Lowest is the lowest timestamp the window was announced at.
	Lowest state.Value[int64]

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

// mustFanOut reports whether an element of window start at timestamp ts must
// be announced to every key, given the lowest timestamp the window was
// announced at before (announced false: never).
//
// An announcement at t holds the gate's watermark below the boundaries after
// t until the keys armed them (windowsToArm). A later element at ts < t must
// also hold the boundaries in (ts, t], so it is announced again. Each repeat
// crosses a boundary: at most 1 + 2·(maxGapWindows+1) announcements a window.
func mustFanOut(p triggers.Policy, start, boundMs, ts, lowest int64, announced bool) bool {
	if !announced {
		return true
	}
	if ts >= lowest {
		return false
	}
	for _, s := range windowsToArm(p, start, boundMs, model.NoWatermark) {
		for _, b := range []int64{p.WindowEnd(s), p.CloseTime(s)} {
			if ts < b && b <= lowest {
				return true
			}
		}
	}
	return false
}
