package launch

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/testing/promtext"
)

// TestMetricsScrapedDuringRun follows SPEC §7's minimal sequence with
// --metrics-addr and scrapes /metrics while the job runs, parsing the
// exposition format, until every record read has its verdict; after the
// graceful stop, the conservation counters of the last scrape are the
// summary's, as are the reads per partition and the delay histogram's count.
func TestMetricsScrapedDuringRun(t *testing.T) {
	dir := writeLog(t, minimalLog...)
	o := options(t, dir)
	o.Follow = true
	o.PollInterval = 100 * time.Millisecond
	o.QuietPeriod = 500 * time.Millisecond
	o.MetricsAddr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	url := "http://" + o.MetricsAddr + "/metrics"

	job := runInBackground(t, o)
	judged := func(e promtext.Exposition) (read, verdicts float64) {
		read, _ = e.Value("revenue_records_read_total")
		if f := e["revenue_records_judged_total"]; f != nil { // absent until the job's figures are
			for _, s := range f.Samples {
				verdicts += s.Value
			}
		}
		return read, verdicts
	}
	var last promtext.Exposition
	scrapes := 0
	for deadline := time.Now().Add(3 * time.Minute); ; {
		if e, err := scrape(url); err == nil {
			scrapes++
			if _, ok := e.Value("revenue_job_figures_available"); !ok {
				job.fail(t, "a scrape without revenue_job_figures_available")
			}
			if read, verdicts := judged(e); e["revenue_records_judged_total"] != nil && read == float64(len(minimalLog)) && verdicts == read {
				last = e
				break
			}
		} else if !strings.Contains(err.Error(), "connection refused") {
			job.fail(t, "scrape: "+err.Error())
		}
		if job.ended() {
			job.fail(t, "the run ended before a scrape saw every record judged")
		}
		if time.Now().After(deadline) {
			job.fail(t, "no scrape saw every record judged within 3m")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v, _ := last.Value("revenue_job_state", "state", "RUNNING"); v != 1 {
		t.Errorf("the last scrape was not taken while the job ran: %v", last["revenue_job_state"])
	}
	if _, ok := last.Value("revenue_partition_watermark_timestamp_seconds", "partition", "p0"); !ok {
		t.Error("no watermark for p0 in the scrape")
	}

	sum, _ := job.stopAndWait(t, 30*time.Second)
	c := sum.Counts
	wantCounts(t, sum, 8, 5, 1, 1, 0, 1)
	for _, want := range []struct {
		name   string
		labels []string
		value  int64
	}{
		{"revenue_records_read_total", nil, c.Read},
		{"revenue_records_judged_total", []string{"verdict", "counted"}, c.Counted},
		{"revenue_records_judged_total", []string{"verdict", "duplicate"}, c.Duplicates},
		{"revenue_records_judged_total", []string{"verdict", "conflict"}, c.Conflicts},
		{"revenue_records_judged_total", []string{"verdict", "quarantined"}, c.Quarantined},
		{"revenue_records_judged_total", []string{"verdict", "too_late"}, c.TooLate},
		{"revenue_partition_records_read_total", []string{"partition", "p0"}, c.ReadBy["p0"]},
		{"revenue_event_lateness_seconds_count", nil, c.Lateness.Total},
	} {
		if got, ok := last.Value(want.name, want.labels...); !ok || got != float64(want.value) {
			t.Errorf("scraped %s%v = %v (present %v); the summary says %d", want.name, want.labels, got, ok, want.value)
		}
	}
	t.Logf("%d scrapes; the summary: %s", scrapes, c.Identity())
}

// scrape GETs url and parses the exposition.
func scrape(url string) (promtext.Exposition, error) {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return promtext.Parse(resp.Body)
}

// A sink that cannot be opened is refused in one line, exit 2, before the
// demo log is generated: a SQLite file in a folder that does not exist
// (Validate), and a file that is not a SQLite database (the sink's own
// check, which needs opening it).
func TestSinkRefusedBeforeDemo(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("text.db", []byte("not a database, only text long enough to be read as one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sink=sqlite:/nonexistent/dir/x.db"}, "launch: --sink=sqlite:/nonexistent/dir/x.db: folder /nonexistent/dir does not exist\n"},
		{[]string{"--sink=sqlite:" + os.TempDir()}, "launch: --sink=sqlite:" + os.TempDir() + ": " + os.TempDir() + " is a folder: want a SQLite file\n"},
		{[]string{"--sink=sqlite:text.db"}, "launch: --sink=sqlite:"},
		{[]string{"--metrics-addr=host"}, "launch: --metrics-addr=host: want PORT or HOST:PORT\n"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(tc.args, &stdout, &stderr)
		if code != ExitUsage || !strings.HasPrefix(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 || stdout.Len() != 0 {
			t.Errorf("launch %s: exit %d, stderr %q, stdout %q; want exit 2 and one line %q", strings.Join(tc.args, " "), code, stderr.String(), stdout.String(), tc.want)
		}
		if _, err := os.Stat(filepath.Join(".", DefaultDemoDir)); err == nil {
			t.Fatalf("launch %s generated the demo log before refusing", strings.Join(tc.args, " "))
		}
	}
}
