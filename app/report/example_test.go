package report_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/metrics"
	"github.com/revenue-stream/hourly/model"
)

// A run report from a job's counts and the sink's changelog; the extension
// picks the form. TraceFolder adds the watermark and delay charts when the
// source was a raw-log folder.
func ExampleWrite() {
	start := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC).UnixMilli()
	end := start + time.Hour.Milliseconds()
	changelog := []model.Row{ // as sqlite.SQLite.Changelog returns it
		{WindowStart: start, WindowEnd: end, Dims: "{}", RevenueMicros: 150_000_000, EventCount: 2, Revision: 1, State: model.OnTime},
		{WindowStart: start, WindowEnd: end, Dims: "{}", RevenueMicros: 170_000_000, EventCount: 3, Revision: 2, State: model.Late},
		{WindowStart: start, WindowEnd: end, Dims: "{}", RevenueMicros: 170_000_000, EventCount: 3, Revision: 3, State: model.Final},
	}
	run := report.Run{
		Title:   "SPEC §7 minimal sequence",
		Counts:  &metrics.Counts{Read: 7, Counted: 3, Duplicates: 1, Conflicts: 1, Quarantined: 1, TooLate: 1},
		Windows: report.WindowsFromChangelog(changelog),
	}
	dir, err := os.MkdirTemp("", "report")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.md")
	if err := report.Write(path, run); err != nil {
		panic(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "read ") || strings.Contains(line, "→") {
			fmt.Println(line)
		}
	}
	// Output:
	// read 7 = counted 3 + duplicates 1 + conflicts 1 + quarantined 1 + too_late 1: ✓
	// | [2026-11-04 10:00, 11:00) | `{}` | r1 ON_TIME 150.000000 (2) → r2 LATE 170.000000 (3) → r3 FINAL 170.000000 (3) |
}
