// Command scale simulates one dedup shard at the design peak through the dedup DoFn's own state
// functions (transforms.DedupShardSim) and prints a capacity plan for Flink and Dataflow
// (docs/capacity.md). Shards never share state, so one shard at rate/shards events/s, times the
// shard count, is the whole; the largest key adds the binomial spread of ids over shards.
//
//	go run ./cmd/scale                       # 20,000 and 100,000 ev/s, 50 h of event time
//	go run ./cmd/scale --rates=20000 --hours=30
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/transforms"
	"github.com/revenue-stream/hourly/triggers"
)

type measured struct {
	rate, shards               int
	shardRate                  float64
	events, counted            int
	seconds                    float64 // wall time of the simulation
	peakBytes, avgBytes        int64   // the key's bag, peak and steady-state mean
	peakLive                   int
	cacheBytes                 int64 // decoded shard at peak
	reload                     time.Duration
	transforms.DedupShardStats // the whole run's
}

func main() {
	ratesFlag := flag.String("rates", "20000,100000", "design rates (events/s), comma-separated")
	hours := flag.Float64("hours", 60, "event time simulated (past two retention periods: the bag's first compaction shows)")
	dupFrac := flag.Float64("dup", 0.03, "fraction of events that are retried copies")
	vcpus := flag.Int("worker-vcpus", 4, "vCPUs per worker")
	memGiB := flag.Float64("worker-memory-gib", 32, "memory per worker, GiB (a 4-vCPU high-memory machine)")
	vcpuRate := flag.Float64("vcpu-rate", 10_000, "events/s one vCPU sustains on a distributed runner (prism measures ~50,000/core; the portable harness adds a gRPC data and state round trip per batch, hence the margin)")
	ckptEvery := flag.Duration("checkpoint-interval", time.Minute, "Flink checkpoint interval")
	uploadMBps := flag.Float64("upload-mbps", 100, "checkpoint upload bandwidth per worker, MB/s")
	flag.Parse()

	p := triggers.Policy{Window: time.Hour, Early: time.Minute, AllowedLateness: 24 * time.Hour}
	retention := p.Window + p.AllowedLateness
	var ms []measured
	for _, f := range strings.Split(*ratesFlag, ",") {
		rate, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || rate <= 0 {
			fmt.Fprintf(os.Stderr, "scale: --rates: bad rate %q\n", f)
			os.Exit(2)
		}
		shards := pipeline.ShardsFor("flink", rate, retention, p.Window)
		ms = append(ms, simulate(p, retention, rate, shards, *hours, *dupFrac))
	}

	fmt.Print("## Measured: one dedup shard at the design rate\n\n")
	fmt.Print("| rate ev/s | shards | ev/s per shard | live ids per key | key bytes (steady mean / peak) | largest key, any shard | largest value | state B/id (appended / peak key per live id) | cache B/id | reload of largest key | compactions (bytes) | judged ev/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range ms {
		fmt.Printf("| %s | %d | %.2f | %s | %s / %s | %s | %s | %.1f / %.1f | %.1f | %v | %d (%s) | %s |\n",
			num(float64(m.rate)), m.shards, m.shardRate, num(float64(m.peakLive)), mb(m.avgBytes), mb(m.peakBytes),
			mb(largestKey(m)), mb(int64(m.MaxValue)),
			float64(m.AppendedBytes)/float64(m.counted), float64(m.peakBytes)/float64(m.peakLive), float64(m.cacheBytes)/float64(m.peakLive),
			m.reload.Round(time.Millisecond), m.Compactions, mb(m.CompactedBytes), num(float64(m.events)/m.seconds))
	}
	fmt.Printf("\nDay at 20,000 ev/s: %s ids; the key limit is 64 MB (SPEC §8).\n\n", num(20000*86400))

	fmt.Print("## Capacity plan\n\n")
	fmt.Printf("Assumptions: %d vCPUs and %.0f GiB per worker, %s ev/s per vCPU, Flink checkpoints every %v uploaded at %.0f MB/s per worker; memory = 2 GiB base (runner + SDK harness) + the decoded dedup shards the worker owns (measured), at most 75 %% of the machine, the Go memory limit the workers apply; --dedup-cache is the launcher's default for that worker count.\n\n",
		*vcpus, *memGiB, num(*vcpuRate), *ckptEvery, *uploadMBps)
	fmt.Print("| runner | rate ev/s | workers | memory / worker | disk / worker | dedup state (steady / peak) | checkpoint (incremental / full) | checkpoint duration | largest key |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, runner := range []string{"Flink (RocksDB, incremental)", "Dataflow (Streaming Engine)"} {
		for _, m := range ms {
			// Enough vCPUs for the rate, and memory to cache every shard a worker owns.
			cacheTotal := float64(m.cacheBytes) * float64(m.shards)
			workers := max(int(math.Ceil(float64(m.rate)/(float64(*vcpus)**vcpuRate))),
				int(math.Ceil(cacheTotal/((0.75**memGiB-2)*(1<<30)))))
			steady, peak := m.avgBytes*int64(m.shards), m.peakBytes*int64(m.shards)
			cachePerWorker := cacheTotal / float64(workers)
			// The launcher's cache for this many workers, and the workers' memory limit.
			cache := pipeline.DedupCacheFor("flink", m.rate, m.shards, workers, retention+p.Window+10*time.Minute)
			limit := transforms.MemoryLimitFor(int64(*memGiB * (1 << 30)))
			mem := fmt.Sprintf("%.1f GiB (--dedup-cache %dGiB, GOMEMLIMIT %.0fGiB)", (cachePerWorker+2*(1<<30))/(1<<30), cache>>30, float64(limit)/(1<<30))
			// Per checkpoint interval: new ids and compaction rewrites, x2 for RocksDB's write
			// amplification.
			perSec := float64(m.AppendedBytes+m.CompactedBytes) / (*hours * 3600) * float64(m.shards)
			incr := int64(2 * perSec * ckptEvery.Seconds())
			if strings.HasPrefix(runner, "Flink") {
				disk := fmt.Sprintf("%s local SSD (2x its peak state)", gb(2*peak/int64(workers)))
				dur := float64(incr)/float64(workers)/(*uploadMBps*1e6) + 1
				fmt.Printf("| %s | %s | %d | %s | %s | %s / %s | %s / %s | ~%.0f s (restore of the full state: ~%.0f s) | %s |\n",
					runner, num(float64(m.rate)), workers, mem, disk, gb(steady), gb(peak), mb(incr), gb(peak), dur,
					float64(peak)/float64(workers)/(*uploadMBps*1e6), mb(largestKey(m)))
			} else {
				fmt.Printf("| %s | %s | %d | %s | boot disk only (state in Streaming Engine) | %s / %s | no checkpoints: commits %s/s | per work item, small | %s |\n",
					runner, num(float64(m.rate)), workers, mem, gb(steady), gb(peak), mb(int64(perSec/2*2)), mb(largestKey(m)))
			}
		}
	}
}

// largestKey is the peak key plus the spread of a binomial over shards:
// mean + sqrt(2 ln shards) standard deviations.
func largestKey(m measured) int64 {
	spread := 1 + math.Sqrt(2*math.Log(float64(m.shards)))/math.Sqrt(float64(m.peakLive))
	return int64(float64(m.peakBytes) * spread)
}

// simulate runs one shard at rate/shards events/s over hours of event time,
// a batch per second of traffic, the watermark 10 minutes behind.
func simulate(p triggers.Policy, retention time.Duration, rate, shards int, hours, dupFrac float64) measured {
	m := measured{rate: rate, shards: shards, shardRate: float64(rate) / float64(shards)}
	sim := transforms.NewDedupShardSim(p, retention.Milliseconds())
	base := time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC).UnixMilli()
	total := int(m.shardRate * hours * 3600)
	stepMs := 1000 / m.shardRate
	var peakBag *transforms.DedupShardSim
	var sum float64
	var samples int
	seq := uint64(0x9e3779b97f4a7c15)
	start := time.Now()
	batch := make([]model.Event, 0, 64)
	flush := func(now int64) {
		m.counted += sim.Batch(batch)
		batch = batch[:0]
		sim.Advance(now - (10 * time.Minute).Milliseconds())
		if b := sim.StateBytes(); b > m.peakBytes {
			m.peakBytes, m.peakLive = b, sim.Live()
			peakBag = sim.Snapshot()
			m.cacheBytes = sim.CacheBytes()
		}
		if float64(now-base) > (retention+2*p.Window).Hours()*3.6e6 {
			sum += float64(sim.StateBytes())
			samples++
		}
	}
	lastFlush := base
	for i := 0; i < total; i++ {
		ts := base + int64(float64(i)*stepMs)
		seq = seq*6364136223846793005 + 1442695040888963407
		id := i
		if float64(seq>>11)/(1<<53) < dupFrac && i > 100 {
			id = i - 1 - int(seq%100) // a retry of a recent event
		}
		batch = append(batch, model.Event{
			EventID:     fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", id, id%65536, id%4096, id%4096, id),
			EventTime:   ts,
			Fingerprint: uint64(id) * 0x9e3779b97f4a7c15,
		})
		m.events++
		if ts-lastFlush >= 1000 {
			flush(ts)
			lastFlush = ts
		}
	}
	flush(lastFlush)
	m.seconds = time.Since(start).Seconds()
	m.avgBytes = int64(sum / float64(max(samples, 1)))
	m.DedupShardStats = sim.DedupShardStats
	// The reload a cache miss costs, at the key's largest (median of 3).
	var ds []time.Duration
	for range 3 {
		t0 := time.Now()
		if _, err := peakBag.Reload(); err != nil {
			fmt.Fprintln(os.Stderr, "scale: reload:", err)
			os.Exit(1)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	m.reload = ds[len(ds)/2]
	return m
}

func num(v float64) string { return report.Count(int64(math.Round(v))) }

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
func gb(b int64) string { return fmt.Sprintf("%.0f GB", float64(b)/1e9) }
