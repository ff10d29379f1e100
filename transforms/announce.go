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
// with data (issue #12), so that each key arms the end and close timers of
// every window, not only of the windows its records fell in: without it a
// record of a returning partition whose id lands on a key that saw none of
// its window would be counted into a window already FINAL, or start a
// window past its end with ON_TIME instead of LATE.
//
// windows holds, per source bundle, one element per window of the bundle:
// KV<window start, timestamp>, stamped with the earliest timestamp of the
// window's events in the bundle, which rule (a) put below its close time
// (see BatchByShard). The step is keyed by window start and remembers in its
// state the lowest timestamp it announced the window at: it announces a
// window to every key the first time, and again only when a later element
// comes at a lower timestamp with a boundary in between (mustFanOut). The
// work per bundle is one state read per window of the bundle; the keys
// (GateKeys, not the dedup shards) are paid once per window.
//
// An announcement (model.EventBatch with Windows and no events) carries the
// timestamp of the element that caused it, so until a key has taken it in
// and armed the window's timers it holds the gate's watermark below that
// timestamp, and with it the revision step's: FINAL cannot be written
// before every key knows the window is closed. A retried bundle repeats its
// announcements; the state that suppresses later ones is committed with the
// bundle that emitted them.
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
// An announcement at timestamp t holds the gate's watermark below every
// boundary after t until the keys armed it: the end and close of the
// windows a key arms for start (windowsToArm). A later element at ts < t
// would hold below the boundaries in (ts, t] too, which the earlier
// announcement did not: it is announced again. On prism, which runs a
// stateful step's element only once the watermark reached its timestamp, such
// an element is behind the watermark and these boundaries are already past;
// runners that run elements ahead of the watermark get the same holds as an
// announcement by every bundle would give. Each repeat crosses at least one
// boundary, so a window is announced at most 1 + 2·(maxGapWindows+1) times.
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
