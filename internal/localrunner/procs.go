package localrunner

import (
	"os"
	"runtime"
)

// procsPerCPU is how many Go processors a process that runs prism gets per
// CPU: prism v2.77.0's bundle loop spins, holding a processor the goroutines
// that end its wait queue behind (measured in docs/performance.md).
const procsPerCPU = 4

// procsFor is the GOMAXPROCS a process with procs processors sets, and
// whether it sets one: an explicit GOMAXPROCS (env) is left alone.
func procsFor(env string, procs int) (int, bool) {
	if env != "" {
		return procs, false
	}
	return procsPerCPU * procs, true
}

// inProcess tunes this process once prism runs in it: the GC pacer (gcpace.go) and, once, more
// Go processors (procsFor).
func inProcess() {
	startPacer()
	if n, set := procsFor(os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0)); set && !procsRaised {
		runtime.GOMAXPROCS(n)
		procsRaised = true
	}
}

var procsRaised bool
