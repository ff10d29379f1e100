package advise

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The generated logs of the tests: lateness drawn from fixed percentiles,
// duplicate gaps from a fixed distribution, a partition that falls silent
// and delivers its devices' backlog when it comes back, one malformed line
// per partition. Every line carries its arrival instant (received_at).

// genConfig shapes a generated log.
type genConfig struct {
	start      time.Time
	partitions int
	step       time.Duration // arrival spacing within a partition
	slots      int           // originals per partition
	// silent, when set, is the partition that stays silent over
	// [silentFrom, silentTo) and then delivers what arrived meanwhile,
	// one record a second.
	silent               int
	silentFrom, silentTo time.Duration // from start
	// copies says whether originals get retries (identical and conflicting).
	copies bool
	// tail says whether retries may arrive after the partition's last
	// original (up to 26 h later, the distribution's longest gap); without
	// it those are left out, so the partition never falls silent.
	tail bool
}

// delayOf is the fixed percentile distribution of how far behind its
// arrival an original's event time lies: 70 % on time, 15 % 3 min, 10 %
// 20 min, 4 % 2 h, 1 % 30 h (beyond the 24 h correction period).
func delayOf(k int) time.Duration {
	switch k % 100 {
	case 99:
		return 30 * time.Hour
	case 95, 96, 97, 98:
		return 2 * time.Hour
	}
	switch k % 100 / 5 {
	case 14, 15, 16:
		return 3 * time.Minute
	case 17, 18:
		return 20 * time.Minute
	}
	return 0
}

// copyGaps is the fixed distribution of identical retries' gaps after
// their original (one retry for every tenth original).
var copyGaps = []time.Duration{10 * time.Second, 2 * time.Minute, 30 * time.Minute, 3 * time.Hour, 26 * time.Hour}

// genRec is one generated line as the reference computation sees it.
type genRec struct {
	part    int
	at      int64 // arrival, ms
	et      int64
	valid   bool
	id      string
	user    string
	amount  int64 // micros
	region  string
	line    string
	content string // the business content: what the fingerprint covers
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// writeGenLog writes the log into a new folder and returns it with its
// records.
func writeGenLog(t testing.TB, c genConfig) (string, []genRec) {
	t.Helper()
	start := c.start.UnixMilli()
	var recs []genRec
	for p := range c.partitions {
		offset := int64(p) * 7_000 // partitions interleave
		var part []genRec
		burst := 0
		for k := range c.slots {
			at := start + offset + int64(k)*ms(c.step)
			if p == c.silent && c.silentTo > 0 && at >= start+ms(c.silentFrom) && at < start+ms(c.silentTo) {
				at = start + ms(c.silentTo) + int64(burst)*1000 + 500
				burst++
			}
			r := genRec{part: p, at: at, valid: true, id: fmt.Sprintf("p%d-%d", p, k), user: fmt.Sprintf("u%d", k%40),
				amount: int64(k%17+1) * 1_250_000, region: []string{"eu", "us", "apac"}[(k+p)%3]}
			r.et = start + offset + int64(k)*ms(c.step) - ms(delayOf(k))
			part = append(part, r)
			if k == 500 {
				part = append(part, genRec{part: p, at: at + 3, line: `{"event_id":"bad` + fmt.Sprint(p) + `","event_time":`})
			}
			if !c.copies {
				continue
			}
			last := start + offset + int64(c.slots-1)*ms(c.step)
			if cp := r; k%10 == 3 {
				cp.at = at + ms(copyGaps[k/10%len(copyGaps)]) + 1
				if c.tail || cp.at <= last {
					part = append(part, cp)
				}
			}
			if k%50 == 7 {
				cp := r
				cp.at, cp.amount = at+ms(time.Minute)+2, r.amount+10_000
				if c.tail || cp.at <= last {
					part = append(part, cp)
				}
			}
		}
		slices.SortStableFunc(part, func(a, b genRec) int { return cmp.Compare(a.at, b.at) })
		// A malformed line has no readable received_at: it takes its
		// predecessor's, as the advisor reads it.
		for i := range part {
			if !part[i].valid && i > 0 {
				part[i].at = part[i-1].at
			}
		}
		recs = append(recs, part...)
	}
	dir := filepath.Join(t.TempDir(), "log")
	for p := range c.partitions {
		var lines []string
		for i := range recs {
			r := &recs[i]
			if r.part != p {
				continue
			}
			if r.valid {
				r.content = fmt.Sprintf("%d|%s|%d|%s", r.et, r.user, r.amount, r.region)
				r.line = fmt.Sprintf(`{"event_id":%q,"event_time":%q,"user_id":%q,"amount":"%d.%06d","region":%q,"received_at":%q}`,
					r.id, fmtMs(r.et), r.user, r.amount/1e6, r.amount%1e6, r.region, fmtMs(r.at))
			}
			lines = append(lines, r.line)
		}
		pdir := filepath.Join(dir, fmt.Sprintf("p%d", p))
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Files of 1,000 lines, named in arrival order.
		for f := 0; f*1000 < len(lines); f++ {
			chunk := lines[f*1000 : min(len(lines), (f+1)*1000)]
			if err := os.WriteFile(filepath.Join(pdir, fmt.Sprintf("%06d.jsonl", f+1)), []byte(strings.Join(chunk, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Valid records arrive at distinct instants, so that arrival order is
	// one order; a malformed line follows its predecessor (stable sort:
	// partition by partition, then file order).
	seen := map[int64]bool{}
	for _, r := range recs {
		if r.valid && seen[r.at] {
			t.Fatalf("generator: two records arrive at %d", r.at)
		}
		seen[r.at] = true
	}
	slices.SortStableFunc(recs, func(a, b genRec) int { return cmp.Compare(a.at, b.at) })
	return dir, recs
}

func fmtMs(v int64) string { return time.UnixMilli(v).UTC().Format("2006-01-02T15:04:05.000Z") }

const noWM int64 = math.MinInt64
