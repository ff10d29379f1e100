package localrunner

import (
	"os"
	"runtime"
)

// procsPerCPU is how many Go processors a process that runs prism gets per
// CPU. Prism v2.77.0's bundle loop spins between a bundle's last data and its
// response (docs/performance.md); at GOMAXPROCS = CPUs a spinning loop holds
// a whole processor and the goroutines that would end its wait queue behind
// it. With more processors than CPUs the kernel shares the CPUs among the
// threads and the wait ends sooner: the 1M-record bench log on 2 CPUs took
// 14.6 s and 26.7 CPU-s at 2, 7.0–7.5 s and 13–14 CPU-s at 4 to 32.
const procsPerCPU = 4

// procsFor is the GOMAXPROCS a process with procs processors sets, and
// whether it sets one: an explicit GOMAXPROCS (env) is left alone.
func procsFor(env string, procs int) (int, bool) {
	if env != "" {
		return procs, false
	}
	return procsPerCPU * procs, true
}

// raiseProcs applies procsFor to this process once.
func raiseProcs() {
	if n, set := procsFor(os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0)); set && !procsRaised {
		runtime.GOMAXPROCS(n)
		procsRaised = true
	}
}

var procsRaised bool
