// Command scale simulates one dedup shard at the design peak through the dedup DoFn's own state
// functions (transforms.DedupShardSim) and prints a capacity plan for Flink and Dataflow
// (docs/capacity.md). Shards never share state, so one shard at rate/shards events/s, times the
// shard count, is the whole; the largest key adds the binomial spread of ids over shards.
//
//	go run ./cmd/scale                       # 20,000 and 100,000 ev/s, 50 h of event time
//	go run ./cmd/scale --rates=20000 --hours=30
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/transforms"
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

func main() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) }

// Main runs cmd/scale with args (without the program name) and returns its exit code: a bad flag,
// value or argument is one line on stderr and exit 2, before anything is simulated.
func Main(args []string, stdout, stderr io.Writer) int {
	return cli.Main(cli.Command[options]{
		Name: "scale",
		Synopsis: `Usage: scale [--rates=20000,100000] [--hours=60] [--worker-memory-gib=32] [flags]

Simulates one dedup shard at each design rate through the dedup step's own state functions and
prints a capacity plan for Flink and Dataflow (docs/capacity.md).`,
		Defaults: defaults,
		Flags:    flagTable,
		Plain:    true,
		Validate: func(o options) (slog.Level, error) { return slog.LevelInfo, o.validate() },
		Run: func(_ context.Context, o options, stdout io.Writer) (int, error) {
			if err := run(o, stdout); err != nil {
				return 1, err
			}
			return 0, nil
		},
	}, args, stdout, stderr)
}

// options are cmd/scale's settings: the load simulated and the workers planned for it.
type options struct {
	rates           []int
	hours, dup      float64
	vcpus           int
	memGiB          float64
	vcpuRate        float64
	checkpointEvery time.Duration
	uploadMBps      float64
}

func defaults() options {
	return options{rates: []int{20_000, 100_000}, hours: 60, dup: 0.03, vcpus: 4, memGiB: 32, vcpuRate: 10_000,
		checkpointEvery: time.Minute, uploadMBps: 100}
}

// The settings the plan is for: cmd/launch's defaults; bound is the watermark's lag behind the
// events (--ooo-bound).
var (
	policy, bound = pipeline.Defaults().Triggers, pipeline.Defaults().Watermark.OutOfOrderBound
	retention     = pipeline.Defaults().Retention()
	// minHours is where simulate starts sampling the key's steady state: fewer hours measure none.
	minHours = (retention + 2*policy.Window).Hours()
)

// Bounds past which the plan's arithmetic would overflow or the simulation not end.
const (
	maxRate   = 10_000_000
	maxHours  = 1_000
	maxMemGiB = 1 << 20 // 1 PiB
)

func flagTable(o *options) []cli.Group {
	return []cli.Group{
		{Title: "The load", Flags: []cli.Flag{
			{Name: "rates", Value: cli.ListOf(&o.rates, "EV/S,...", "rate (whole events/s)", false, strconv.Atoi, strconv.Itoa), Usage: "design rates (events/s), comma-separated"},
			{Name: "hours", Value: cli.Float(&o.hours), Arg: "H",
				Usage: fmt.Sprintf("event time simulated, more than %.0f and at most %d (past two retention periods: the bag's first compaction shows)", minHours, maxHours)},
			{Name: "dup", Value: cli.Float(&o.dup), Arg: "FRACTION", Usage: "fraction of events that are retried copies, from 0 to below 1"},
		}},
		{Title: "The workers", Flags: []cli.Flag{
			{Name: "worker-vcpus", Value: cli.Count(&o.vcpus), Usage: "vCPUs per worker"},
			{Name: "worker-memory-gib", Value: cli.Float(&o.memGiB), Arg: "GIB", Usage: "memory per worker, GiB (a 4-vCPU high-memory machine)"},
			{Name: "vcpu-rate", Value: cli.Float(&o.vcpuRate), Arg: "EV/S",
				Usage: "events/s one vCPU sustains on a distributed runner (prism measures ~50,000/core; the portable harness adds a gRPC data and state round trip per batch, hence the margin)"},
			{Name: "checkpoint-interval", Value: cli.Duration(&o.checkpointEvery), Usage: "Flink checkpoint interval"},
			{Name: "upload-mbps", Value: cli.Float(&o.uploadMBps), Arg: "MB/S", Usage: "checkpoint upload bandwidth per worker, MB/s"},
		}},
	}
}

// validate checks every setting's range, each error naming its flag.
func (o options) validate() error {
	errs := []error{
		cli.ErrIf(o.hours <= minHours || o.hours > maxHours, "--hours=%v: want more than %.0f (the steady state is measured past the retention and two windows) and at most %d", o.hours, minHours, maxHours),
		cli.ErrIf(o.dup < 0 || o.dup >= 1, "--dup=%v: want a fraction from 0 to below 1", o.dup),
		cli.ErrIf(o.memGiB <= 0 || o.memGiB > maxMemGiB, "--worker-memory-gib=%v: want more than 0 and at most %d", o.memGiB, maxMemGiB),
		cli.ErrIf(o.vcpuRate < 1, "--vcpu-rate=%v: want at least 1 event/s", o.vcpuRate),
		cli.ErrIf(o.checkpointEvery <= 0, "--checkpoint-interval=%v: want more than 0", o.checkpointEvery),
		cli.ErrIf(o.uploadMBps <= 0, "--upload-mbps=%v: want more than 0", o.uploadMBps),
		cli.ErrIf(len(o.rates) == 0, "--rates: want at least one rate"),
	}
	for _, rate := range o.rates {
		errs = append(errs, cli.ErrIf(rate <= 0 || rate > maxRate, "--rates: bad rate %d: want 1 to %d events/s", rate, maxRate))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, rate := range o.rates {
		if _, cache, ceiling, ok := workersFor(o, rate); !ok {
			return fmt.Errorf("--worker-memory-gib=%v: a worker caps its dedup cache at %.2f GiB (its memory limit less 1 GiB), below the %d GiB one shard needs at %d ev/s", o.memGiB, float64(ceiling)/(1<<30), cache>>30, rate)
		}
	}
	return nil
}

// run simulates each rate and prints the measurements and the plan.
func run(o options, w io.Writer) error {
	var ms []measured
	for _, rate := range o.rates {
		shards := sized(rate, 0).DedupShards
		m, err := simulate(rate, shards, o.hours, o.dup)
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}

	fmt.Fprint(w, "## Measured: one dedup shard at the design rate\n\n")
	fmt.Fprint(w, "| rate ev/s | shards | ev/s per shard | live ids per key | key bytes (steady mean / peak) | largest key, any shard | largest value | state B/id (appended / peak key per live id) | cache B/id | reload of largest key | compactions (bytes) | judged ev/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range ms {
		fmt.Fprintf(w, "| %s | %d | %.2f | %s | %s / %s | %s | %s | %.1f / %.1f | %.1f | %v | %d (%s) | %s |\n",
			num(float64(m.rate)), m.shards, m.shardRate, num(float64(m.peakLive)), mb(m.avgBytes), mb(m.peakBytes),
			mb(largestKey(m)), mb(int64(m.MaxValue)),
			float64(m.AppendedBytes)/float64(m.counted), float64(m.peakBytes)/float64(m.peakLive), float64(m.cacheBytes)/float64(m.peakLive),
			m.reload.Round(time.Millisecond), m.Compactions, mb(m.CompactedBytes), num(float64(m.events)/m.seconds))
	}
	fmt.Fprintf(w, "\nDay at 20,000 ev/s: %s ids; the key limit is 64 MB (SPEC §8).\n\n", num(20000*86400))

	fmt.Fprint(w, "## Capacity plan\n\n")
	fmt.Fprintf(w, "Assumptions: %d vCPUs and %.0f GiB per worker, %s ev/s per vCPU, Flink checkpoints every %v uploaded at %.0f MB/s per worker. Workers: enough vCPUs for the rate, and enough that the launcher's --dedup-cache for that count (%.1f B per id of the shards a worker owns) fits under the cap the workers put on their cache (their Go memory limit, 3/4 of the machine, less 1 GiB: %.0f GiB), so every worker caches the shards it owns; memory = 2 GiB base (runner + SDK harness) + the decoded shards the busiest worker owns (measured).\n\n",
		o.vcpus, o.memGiB, num(o.vcpuRate), o.checkpointEvery, o.uploadMBps, transforms.DedupCacheBytesPerID,
		float64(transforms.DedupCacheCeiling(transforms.MemoryLimitFor(o.memoryBytes())))/(1<<30))
	fmt.Fprint(w, "| runner | rate ev/s | workers | memory / worker | disk / worker | dedup state (steady / peak) | checkpoint (incremental / full) | checkpoint duration | largest key |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, runner := range []string{"Flink (RocksDB, incremental)", "Dataflow (Streaming Engine)"} {
		for _, m := range ms {
			// validate checked that some count fits.
			workers, cache, _, _ := workersFor(o, m.rate)
			steady, peak := m.avgBytes*int64(m.shards), m.peakBytes*int64(m.shards)
			owned := (m.shards + workers - 1) / workers
			measuredCache := float64(m.cacheBytes) * float64(owned)
			limit := transforms.MemoryLimitFor(o.memoryBytes())
			mem := fmt.Sprintf("%.1f GiB (--dedup-cache %dGiB, GOMEMLIMIT %.0fGiB)", (measuredCache+2*(1<<30))/(1<<30), cache>>30, float64(limit)/(1<<30))
			// Per checkpoint interval: new ids and compaction rewrites, x2 for RocksDB's write
			// amplification.
			perSec := float64(m.AppendedBytes+m.CompactedBytes) / (o.hours * 3600) * float64(m.shards)
			incr := 2 * perSec * o.checkpointEvery.Seconds()
			if strings.HasPrefix(runner, "Flink") {
				disk := fmt.Sprintf("%s local SSD (2x its peak state)", gb(2*peak/int64(workers)))
				dur := incr/float64(workers)/(o.uploadMBps*1e6) + 1
				fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s / %s | %s / %s | ~%.0f s (restore of the full state: ~%.0f s) | %s |\n",
					runner, num(float64(m.rate)), workers, mem, disk, gb(steady), gb(peak), mb(incr), gb(peak), dur,
					float64(peak)/float64(workers)/(o.uploadMBps*1e6), mb(largestKey(m)))
			} else {
				fmt.Fprintf(w, "| %s | %s | %d | %s | boot disk only (state in Streaming Engine) | %s / %s | no checkpoints: commits %s/s | per work item, small | %s |\n",
					runner, num(float64(m.rate)), workers, mem, gb(steady), gb(peak), mb(perSec), mb(largestKey(m)))
			}
		}
	}
	return nil
}

// largestKey is the peak key plus the spread of a binomial over shards:
// mean + sqrt(2 ln shards) standard deviations.
func largestKey(m measured) int64 {
	spread := 1 + math.Sqrt(2*math.Log(float64(m.shards)))/math.Sqrt(float64(m.peakLive))
	return int64(float64(m.peakBytes) * spread)
}

// simulate runs one shard at rate/shards events/s over hours of event time, a batch per second of
// traffic, the watermark bound behind.
func simulate(rate, shards int, hours, dupFrac float64) (measured, error) {
	m := measured{rate: rate, shards: shards, shardRate: float64(rate) / float64(shards)}
	sim := transforms.NewDedupShardSim(policy, retention.Milliseconds())
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
		sim.Advance(now - bound.Milliseconds())
		if b := sim.StateBytes(); b > m.peakBytes {
			m.peakBytes, m.peakLive = b, sim.Live()
			peakBag = sim.Snapshot()
			m.cacheBytes = sim.CacheBytes()
		}
		if float64(now-base) > minHours*3.6e6 {
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
	if peakBag == nil || samples == 0 {
		return m, fmt.Errorf("--hours=%v at %.2f ev/s per shard measures no steady state: simulate more hours", hours, m.shardRate)
	}
	m.avgBytes = int64(sum / float64(max(samples, 1)))
	m.DedupShardStats = sim.DedupShardStats
	// The reload a cache miss costs, at the key's largest (median of 3).
	var ds []time.Duration
	for range 3 {
		t0 := time.Now()
		if _, err := peakBag.Reload(); err != nil {
			return m, fmt.Errorf("reload: %w", err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	m.reload = ds[len(ds)/2]
	return m, nil
}

func num(v float64) string { return report.Count(int64(math.Round(v))) }

func mb[B int64 | float64](b B) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
func gb[B int64 | float64](b B) string { return fmt.Sprintf("%.0f GB", float64(b)/1e9) }
