package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/capability"
)

// WorkersInProcess reports whether a job on runner with the given
// --environment_type has its SDK workers in this process: prism in its
// default LOOPBACK environment. Only then do the workers see this machine's
// local paths and the launcher's memory.
func WorkersInProcess(runner, environmentType string) bool {
	if !capability.IsPrism(runner) {
		return false
	}
	switch strings.ToLower(environmentType) {
	case "", "loopback":
		return true
	}
	return false
}

// LocalPath reports whether path names something only this machine can
// reach: no scheme, file:// or Beam's memfs://.
func LocalPath(path string) bool {
	scheme, _, ok := strings.Cut(path, "://")
	if !ok {
		return true
	}
	switch strings.ToLower(scheme) {
	case "file", "memfs":
		return true
	}
	return false
}

// Placement checks that the parts a job's workers read or write are reachable
// from them. A command lists its parts with Part and calls Err once.
type Placement struct {
	// Runner and EnvironmentType are Beam's --runner and --environment_type.
	Runner, EnvironmentType string
	// Shared is --shared-filesystem: the user says every worker sees this
	// machine's local paths (a job server on this machine, an NFS mount).
	Shared bool

	err error
}

// Local names a part that is local-only (flag is how the user named it,
// e.g. "--sink=sqlite:revenue.db") and what to use instead. The first one
// wins: a command reports one line.
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

// UseSelfAsWorker makes this binary the worker binary when workers run in
// other processes and --worker_binary is not set (the SDK would otherwise
// compile the caller's package, which fails for a library package). The
// workers must then run this machine's OS and architecture.
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
