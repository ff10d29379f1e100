//go:build faults

package faults

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// plan maps each armed point to the pass that fires it, read from Env at start.
var plan = func() map[string]int64 {
	plan := map[string]int64{}
	for _, item := range strings.Split(os.Getenv(Env), ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			continue
		}
		if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > 0 {
			plan[name] = v
		}
	}
	return plan
}()

var passes sync.Map // point -> *atomic.Int64

// Fire counts a pass through point and reports whether it is the armed one.
func Fire(point string) bool {
	n, ok := plan[point]
	if !ok {
		return false
	}
	c, _ := passes.LoadOrStore(point, new(atomic.Int64))
	return c.(*atomic.Int64).Add(1) == n
}

// Crash kills this process without any cleanup, as SIGKILL would.
func Crash(point string) {
	fmt.Fprintf(os.Stderr, "faults: %s fired: killing the process\n", point)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
