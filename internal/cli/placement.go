package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/capability"
)

// WorkersInProcess reports whether a job on runner with the given --environment_type has its
// SDK workers in this process (prism in LOOPBACK), seeing local paths and the launcher's memory.
func WorkersInProcess(runner, environmentType string) bool {
	return capability.IsPrism(runner) && (environmentType == "" || strings.EqualFold(environmentType, "loopback"))
}

// LocalPath reports whether only this machine reaches path: no scheme, file:// or memfs://.
func LocalPath(path string) bool {
	scheme, _, ok := strings.Cut(path, "://")
	return !ok || strings.EqualFold(scheme, "file") || strings.EqualFold(scheme, "memfs")
}

// Placement checks that the parts a job's workers read or write are reachable from them.
type Placement struct {
	// Runner and EnvironmentType are Beam's --runner and --environment_type.
	Runner, EnvironmentType string
	// Shared is --shared-filesystem: every worker sees this machine's local paths.
	Shared bool

	err error
}

// Local names a local-only part as the user spelled it ("--sink=sqlite:revenue.db") and what to
// use instead; the first one wins.
func (p *Placement) Local(flag, instead string) {
	if p.err != nil || p.Shared || WorkersInProcess(p.Runner, p.EnvironmentType) {
		return
	}
	where := "--runner=" + p.Runner
	if capability.IsPrism(p.Runner) {
		where = "--environment_type=" + p.EnvironmentType
	}
	p.err = fmt.Errorf("%s is local to this machine, but with %s the workers run in other processes or on other machines: %s, "+
		"or pass --shared-filesystem if every worker sees this machine's paths", flag, where, instead)
}

// Err is the refusal, or nil when every part is reachable.
func (p *Placement) Err() error { return p.err }

// UseSelfAsWorker makes this binary the worker binary when workers run in other processes and
// --worker_binary is not set: the SDK would otherwise compile the caller's library package.
func UseSelfAsWorker() error {
	if *jobopts.WorkerBinary != "" || jobopts.IsLoopback() {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("worker binary: %w (pass --worker_binary)", err)
	}
	*jobopts.WorkerBinary = self
	return nil
}
