package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPrismUI: --prism-ui-port serves prism's web UI for the job service
// this process runs; it lists the job and shows its state and counters.
func TestPrismUI(t *testing.T) {
	port := freePort(t)
	o := options(t, writeLog(t, minimalLog...))
	o.PrismUIPort = port
	sum, _ := run(t, o)
	if sum.JobID == "" {
		t.Fatal("no job id")
	}

	base := fmt.Sprintf("http://localhost:%d/", port)
	index := httpGet(t, base)
	if !strings.Contains(index, `<a href="job/`+sum.JobID+`">`+sum.JobID+`</a>`) {
		t.Errorf("the UI's job list lacks %s:\n%s", sum.JobID, index)
	}
	page := httpGet(t, base+"job/"+sum.JobID)
	// The figures are prism's own (its GetJobMetrics), the ones the summary
	// reads: the same values.
	for _, want := range []string{`<div class="job-state">DONE</div>`,
		fmt.Sprintf("revenue.read: %d ", sum.Counts.Read),
		"revenue.event_lateness_0_1m: 4 "} {
		if !strings.Contains(page, want) {
			t.Errorf("the UI's job page lacks %q:\n%s", want, page)
		}
	}

	// A port in use is a set-up error naming the flag, before any work.
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o = options(t, writeLog(t, minimalLog...))
	o.PrismUIPort = l.Addr().(*net.TCPAddr).Port
	var out bytes.Buffer
	_, err = Run(context.Background(), o, &out)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), fmt.Sprintf("--prism-ui-port=%d: ", o.PrismUIPort)) {
		t.Errorf("a port in use: %v, want a *ConfigError naming --prism-ui-port", err)
	}

	// Only prism has this UI.
	o.Runner = "universal"
	if err := o.Validate(); !errors.As(err, &ce) || !strings.Contains(err.Error(), "--prism-ui-port: the web UI is prism's") {
		t.Errorf("--runner=universal: %v, want a *ConfigError", err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"--prism-ui-port=0"}, &stdout, &stderr); code != ExitUsage ||
		stderr.String() != "launch: --prism-ui-port: invalid port \"0\": want 1 to 65535\n" {
		t.Errorf("--prism-ui-port=0: exit %d, stderr %q", code, stderr.String())
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return string(body)
}
