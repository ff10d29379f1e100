package launch

import (
	"cmp"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/internal/capability"
	"github.com/revenue-stream/hourly/transforms"
)

// embeddedStateBytes is what the embedded runner holds at rate events/s once the retention is
// full: rate × (retention + window) ids in prism's heap, plus the dedup cache (at most cacheBytes).
func embeddedStateBytes(rate int, retention, window time.Duration, cacheBytes int64) int64 {
	ids := int64(float64(rate) * (retention + window).Seconds())
	return ids*transforms.DedupStateBytesPerID + min(int64(float64(ids)*transforms.DedupCacheBytesPerID), cacheBytes)
}

// memoryWarning is the line logged when --design-rate on prism would hold more state than the
// machine's memory ("": it fits, off prism, or no rate set).
func (o Options) memoryWarning(machine int64) string {
	if o.Pipeline.DesignRate <= 0 || machine <= 0 || !capability.IsPrism(o.Runner) {
		return ""
	}
	po := o.Pipeline.WithDefaults()
	cache := int64(cmp.Or(po.DedupCacheBytes, transforms.DefaultDedupCacheBytes))
	need := embeddedStateBytes(po.DesignRate, po.DedupRetention, po.Triggers.Window, cache)
	if need <= machine {
		return ""
	}
	return fmt.Sprintf("--design-rate=%d on the embedded runner holds about %s of dedup state once the %s retention is full (24 B per id in prism's heap, and the --dedup-cache), more than this machine's %s: lower the rate or --dedup-retention, or run on Flink or Dataflow (docs/capacity.md)",
		po.DesignRate, gib(need), po.DedupRetention, gib(machine))
}

func gib(n int64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }
