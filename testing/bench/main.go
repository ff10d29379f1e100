// Command bench measures the streaming pipeline end to end on prism against a
// plain-Go single-process baseline with the same semantics, over the same
// generated raw log, in the same run (issue: throughput and state cost).
//
//	go run ./testing/bench                      # 1,000,000 events, 5 runs of each
//	go run ./testing/bench --events=200000 --runs=3
//	go run ./testing/bench --pair=/tmp/bench-before --dir=LOG --runs=3
//	go run ./testing/bench --shape=even --events=1200000 --span=288h --generate=LOG
//	go run ./testing/bench --mode=pipeline --dir=LOG --check
//
// Each measurement runs in a child process of its own, so its peak RSS
// (VmHWM) and allocations are its own. Medians are printed, with the ratio
// pipeline/baseline: the baseline is the machine's limit to aim at.
//
// --pair=BINARY measures the pipeline of another build of this command (the
// commit before a change, say) against this one's, alternating the two over
// the same log, and prints the medians of both: ev/s, peak RSS and bytes
// allocated per million records. --check makes a pipeline measurement also
// compare the sink's FINAL rows and audit rows (payloads byte for byte)
// with the oracle's recomputation, after its peak RSS is taken.
//
// It lives under testing/, not cmd/, because its baseline is the test
// oracle (testing/oracle): a measuring tool beside the tests, not a shipped
// binary. No package outside testing/ may import testing/ (testing/deps).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "github.com/revenue-stream/hourly/sinks/all"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/app/launch"
	"github.com/revenue-stream/hourly/internal/gen"
	"github.com/revenue-stream/hourly/internal/localrunner"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/oracle"
)

// result is one measurement, printed by a child as JSON.
type result struct {
	Mode       string  `json:"mode"`
	Events     int64   `json:"events"`
	Seconds    float64 `json:"seconds"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// PeakAnonMiB is the largest RssAnon sampled every 20 ms: the peak RSS
	// without the executable's mapped pages, which depend on the page cache
	// (a binary just built or read maps more of itself) and not on the run.
	PeakAnonMiB float64 `json:"peak_anon_mib"`
	AllocMiB    float64 `json:"alloc_mib"`
	Mallocs     uint64  `json:"mallocs"`
	Counted     int64   `json:"counted"`
	// HeapMiB samples the live heap every half second during the run (the
	// SDK harness and prism share this process): flat means no growth
	// beyond the retained state.
	HeapMiB []float64 `json:"heap_mib,omitempty"`
	// Checked says --check compared the sink with the oracle (and found
	// them equal: a difference fails the run).
	Checked bool `json:"checked,omitempty"`
}

func main() {
	events := flag.Int("events", 1_000_000, "distinct purchases in the generated log (before retries)")
	span := flag.Duration("span", 30*time.Hour, "event-time span of the generated log: several times window + allowed lateness shows the dedup state levelling off")
	runs := flag.Int("runs", 5, "measurements of each mode")
	dir := flag.String("dir", "", "raw-log folder to use (generated there if empty or missing)")
	mode := flag.String("mode", "both", "both | pipeline | baseline (pipeline and baseline run one measurement in this process)")
	cpuProfile := flag.String("cpuprofile", "", "with --mode=pipeline|baseline: write a CPU profile (SDK harness and prism run in this process)")
	shape := flag.String("shape", "bench", "generated log: bench (4 partitions, 5 % identical retries, 0.5 % conflicts, 1 % late, 0.1 % too late, 0.01 % malformed) or even (2 partitions, 3 % retries, nothing else; the read-ahead measurements)")
	generate := flag.String("generate", "", "write the generated log (--shape, --events, --span) into this new folder and exit")
	check := flag.Bool("check", false, "with --mode=pipeline: compare the sink's FINAL rows and audit rows with the oracle after the run")
	pair := flag.String("pair", "", "another build of this command: alternate its pipeline with this one's over the same log and print both medians")
	flag.Parse()
	beam.Init() // the pipeline runs on prism in this process (loopback workers)
	localrunner.UseSafeOptions("prism")
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

	switch *mode {
	case "pipeline", "baseline":
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "bench: --cpuprofile:", err)
				os.Exit(2)
			}
			defer pprof.StopCPUProfile()
		}
		r, err := measure(*mode, *dir, *check)
		if p := os.Getenv("BENCH_MEMPROFILE"); p != "" {
			if f, err := os.Create(p); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(r)
		pprof.StopCPUProfile()
		return
	case "both":
	default:
		fmt.Fprintf(os.Stderr, "bench: --mode: want both, pipeline or baseline, got %q\n", *mode)
		os.Exit(2)
	}

	work, err := os.MkdirTemp("", "revenue-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(work)
	logDir := *dir
	if logDir == "" {
		logDir = filepath.Join(work, "log")
	}
	c, err := logShape(*shape, *events, *span)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *generate != "" {
		logDir = *generate
	}
	if _, err := os.Stat(logDir); os.IsNotExist(err) {
		start := time.Now()
		st, err := gen.Write(logDir, c)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: generate:", err)
			os.Exit(1)
		}
		fmt.Printf("generated %d lines (%d events, %d partitions) in %v into %s\n", st.Lines, st.Events, len(st.Partitions), time.Since(start).Round(time.Millisecond), logDir)
	} else if *generate != "" {
		fmt.Fprintf(os.Stderr, "bench: --generate=%s: exists already\n", *generate)
		os.Exit(2)
	}
	if *generate != "" {
		return
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if *pair != "" {
		code := pairRuns(*pair, self, logDir, *runs)
		os.RemoveAll(work)
		os.Exit(code)
	}
	byMode := map[string][]result{}
	for i := 0; i < *runs; i++ {
		// Alternate the modes so that machine noise hits both alike.
		for _, m := range []string{"baseline", "pipeline"} {
			r, err := child(self, m, logDir)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s run %d: %v\n", m, i+1, err)
				os.Exit(1)
			}
			fmt.Printf("run %d %-8s %9d events %7.2fs %9.0f ev/s  peak RSS %6.0f MiB  alloc %7.0f MiB\n",
				i+1, m, r.Events, r.Seconds, float64(r.Events)/r.Seconds, r.PeakRSSMiB, r.AllocMiB)
			byMode[m] = append(byMode[m], r)
		}
	}
	b, p := median(byMode["baseline"]), median(byMode["pipeline"])
	if b.Counted != p.Counted {
		fmt.Fprintf(os.Stderr, "bench: pipeline counted %d events, baseline %d: the two disagree\n", p.Counted, b.Counted)
		os.Exit(1)
	}
	fmt.Printf("\nmedians of %d runs, %d records read, %d counted (GOMAXPROCS=%d, %s)\n", *runs, p.Events, p.Counted, runtime.GOMAXPROCS(0), cpuModel())
	fmt.Println("| mode | ev/s | seconds | peak RSS | allocated |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range []result{p, b} {
		fmt.Printf("| %s | %.0f | %.2f | %.0f MiB | %.0f MiB |\n", r.Mode, float64(r.Events)/r.Seconds, r.Seconds, r.PeakRSSMiB, r.AllocMiB)
	}
	fmt.Printf("\npipeline / baseline throughput: %.2f\n", (float64(p.Events)/p.Seconds)/(float64(b.Events)/b.Seconds))
	fmt.Printf("pipeline live heap over the median run (MiB, every 0.5 s): %s\n", heapLine(p.HeapMiB))
}

func child(self, mode, dir string) (result, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(self, "--mode="+mode, "--dir="+dir)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%v: %s", err, lastLines(errb.String(), 5))
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return result{}, fmt.Errorf("decode %q: %w", out.String(), err)
	}
	return r, nil
}

// logShape is the generated log of --shape.
func logShape(shape string, events int, span time.Duration) (gen.Config, error) {
	c := oracle.BenchLog(events)
	c.Span = span
	switch shape {
	case "bench":
	case "even":
		// An even rate over event time, copies within seconds to hours:
		// what bounds memory is then the read-ahead and the retention.
		c.Partitions = 2
		c.DupRate = 0.03
		c.ConflictRate, c.LateRate, c.TooLateRate, c.MalformedRate = 0, 0, 0, 0
	default:
		return c, fmt.Errorf("--shape: want bench or even, got %q", shape)
	}
	return c, c.Validate()
}

// pairRuns alternates the pipeline of the binary other (built from another
// commit) with this one's over dir, runs times each, and prints both
// medians. It returns the exit code.
func pairRuns(other, self, dir string, runs int) int {
	bins := []struct{ name, path string }{{"other", other}, {"this", self}}
	by := map[string][]result{}
	for i := 0; i < runs; i++ {
		for _, b := range bins {
			r, err := child(b.path, "pipeline", dir)
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: %s run %d: %v\n", b.name, i+1, err)
				return 1
			}
			fmt.Printf("run %d %-5s %9d records %7.2fs %9.0f ev/s  peak RSS %6.0f MiB  anon %6.0f MiB  alloc %7.0f MiB\n",
				i+1, b.name, r.Events, r.Seconds, float64(r.Events)/r.Seconds, r.PeakRSSMiB, r.PeakAnonMiB, r.AllocMiB)
			by[b.name] = append(by[b.name], r)
		}
	}
	fmt.Printf("\nmedians of %d alternated runs (GOMAXPROCS=%d, %s); other = %s\n", runs, runtime.GOMAXPROCS(0), cpuModel(), other)
	// Peak anon beside peak RSS: two binaries map different amounts of
	// themselves (the page cache decides), so RSS alone can mislead a pair.
	fmt.Println("| build | ev/s | seconds | peak RSS | peak anon | allocated per 1M records |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, b := range bins {
		rs := by[b.name]
		fmt.Printf("| %s | %.0f | %.2f | %.0f MiB | %.0f MiB | %.2f GiB |\n", b.name, medianOf(rs, func(r result) float64 { return float64(r.Events) / r.Seconds }),
			medianOf(rs, func(r result) float64 { return r.Seconds }), medianOf(rs, func(r result) float64 { return r.PeakRSSMiB }),
			medianOf(rs, func(r result) float64 { return r.PeakAnonMiB }),
			medianOf(rs, func(r result) float64 { return r.AllocMiB / 1024 / (float64(r.Events) / 1e6) }))
	}
	if a, b := by["other"][0].Counted, by["this"][0].Counted; a != b {
		fmt.Fprintf(os.Stderr, "bench: the two builds counted %d and %d events\n", a, b)
		return 1
	}
	return 0
}

// medianOf is the median of f over rs, each figure taken on its own.
func medianOf(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	return v[len(v)/2]
}

// measure runs one mode over dir in this process.
func measure(mode, dir string, check bool) (r result, err error) {
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	r = result{Mode: mode}
	switch mode {
	case "baseline":
		// Map dedup + hourly sums in one goroutine: the same parsing,
		// validation, watermark and too-late rules, no Beam.
		res, err := oracle.Replay(dir, oracle.DefaultSettings(time.Now()))
		if err != nil {
			return r, err
		}
		r.Events, r.Counted = int64(res.Read), int64(res.Counted)
	case "pipeline":
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			// RssAnon every 20 ms, the live heap every 25th tick (0.5 s).
			defer close(done)
			var peakHeap uint64
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for tick := 1; ; tick++ {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				r.PeakAnonMiB = max(r.PeakAnonMiB, procStatusMiB("RssAnon:"))
				if tick%25 != 0 {
					continue
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				r.HeapMiB = append(r.HeapMiB, float64(ms.HeapInuse)/(1<<20))
				if p := os.Getenv("BENCH_PEAKHEAPPROFILE"); p != "" && ms.HeapInuse >= peakHeap {
					// The live heap at its largest sample: what the peak RSS is made of.
					peakHeap = ms.HeapInuse
					if f, err := os.Create(p); err == nil {
						_ = pprof.Lookup("heap").WriteTo(f, 0)
						f.Close()
					}
				}
			}
		}()
		defer func() { close(stop); <-done }()
		work, err := os.MkdirTemp("", "revenue-bench-sink-")
		if err != nil {
			return r, err
		}
		defer os.RemoveAll(work)
		o := launch.Defaults()
		o.Source = dir
		spec, err := sink.ParseSpec("sqlite:" + filepath.Join(work, "revenue.db"))
		if err != nil {
			return r, err
		}
		o.Sink = spec
		o.LogLevel = slog.LevelWarn
		if v := os.Getenv("BENCH_SHARDS"); v != "" {
			o.Pipeline.DedupShards, _ = strconv.Atoi(v)
		}
		if v := os.Getenv("BENCH_DEDUP_ORDER"); v != "" {
			o.Pipeline.DedupOrder = v // position: the distributed runners' default, measured on prism
		}
		if v := os.Getenv("BENCH_MAX_PER_CALL"); v != "" {
			o.MaxPerCall, _ = strconv.Atoi(v)
		}
		if v := os.Getenv("BENCH_READ_AHEAD"); v != "" {
			o.ReadAheadRecords, _ = strconv.Atoi(v)
		}
		sum, err := launch.Run(context.Background(), o, io.Discard)
		if err != nil {
			return r, err
		}
		r.Events, r.Counted = sum.Counts.Read, sum.Counts.Counted
		if check {
			defer func() {
				if err == nil {
					err = checkSink(dir, o.Sink)
					r.Checked = err == nil
				}
			}()
		}
	}
	r.Seconds = time.Since(start).Seconds()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	r.AllocMiB = float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20)
	r.Mallocs = after.Mallocs - before.Mallocs
	r.PeakRSSMiB = peakRSSMiB()
	return r, nil
}

// checkSink compares what the sink holds after a replay of dir with the
// oracle (oracle.Result.SinkDiff): every window FINAL with the recomputed
// total, and the audit rows with their exact payloads. It runs after the
// peak RSS is read.
func checkSink(dir string, spec sink.Spec) error {
	want, err := oracle.Replay(dir, oracle.DefaultSettings(time.Now()))
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, ok, err := sink.OpenReader(ctx, spec)
	if err != nil || !ok {
		return fmt.Errorf("check: open %s: %v", spec, err)
	}
	defer s.Close()
	d, err := want.SinkDiff(ctx, s)
	if err != nil {
		return err
	}
	if len(d) > 0 {
		return fmt.Errorf("check: %d differences from the oracle, first: %s", len(d), d[0])
	}
	return nil
}

func median(rs []result) result {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Seconds < rs[j].Seconds })
	return rs[len(rs)/2]
}

// peakRSSMiB reads VmHWM from /proc (Linux), 0 elsewhere.
func peakRSSMiB() float64 { return procStatusMiB("VmHWM:") }

// procStatusMiB reads one kB field of /proc/self/status in MiB (Linux), 0
// elsewhere.
func procStatusMiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "model name") {
			if _, v, ok := strings.Cut(line, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// heapLine prints the heap samples, thinned to about 30 values.
func heapLine(h []float64) string {
	if len(h) == 0 {
		return "no samples"
	}
	step := max(1, len(h)/30)
	var parts []string
	for i := 0; i < len(h); i += step {
		parts = append(parts, strconv.FormatFloat(h[i], 'f', 0, 64))
	}
	return strings.Join(parts, " ")
}
