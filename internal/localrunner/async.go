package localrunner

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/revenue-stream/hourly/internal/capability"
)

// CheckAsync refuses --async (Dataflow's --execute_async sets the same flag) when prism would run
// in this process (no --endpoint): beam.Run returns at once, the command returns and the job dies
// with the process, having written nothing (or panics in prism on the way out). With a job server
// at --endpoint, or another runner, the job outlives the command and --async keeps its meaning.
func CheckAsync(command, runner string) error {
	if !*jobopts.Async || !capability.IsPrism(runner) || *jobopts.Endpoint != "" {
		return nil
	}
	return fmt.Errorf("--async: prism runs in this process (no --endpoint), so the job would end with %s before it did any work: drop --async, or submit to a job server with --endpoint=HOST:PORT", command)
}
