package sources

import (
	"sync"
	"time"
)

// readerCalls counts the calls the readers of each folder and partition have
// begun in this test binary (prism's loopback harness runs them here): the
// readers' clock (readerClock) is asked for once per call, when the call
// builds its reader.
var readerCalls = struct {
	sync.Mutex
	n map[[2]string]int
}{n: map[[2]string]int{}}

// The clock is replaced before any test runs, so no reader reads the
// variable while it changes.
func init() {
	readerClock = func(dir, partition string) func() time.Time {
		readerCalls.Lock()
		readerCalls.n[[2]string{dir, partition}]++
		readerCalls.Unlock()
		return time.Now
	}
}

// ReaderCalls is how many calls the reader of partition in folder dir (the
// string given to ReadFolder) has begun. A partition has one restriction,
// processed one call at a time, so when call n+1 has begun, call n has
// ended: its records emitted and its watermark reported.
func ReaderCalls(dir, partition string) int {
	readerCalls.Lock()
	defer readerCalls.Unlock()
	return readerCalls.n[[2]string{dir, partition}]
}
