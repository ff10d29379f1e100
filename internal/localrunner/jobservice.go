package localrunner

import (
	"context"
	"fmt"
	"net"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/revenue-stream/hourly/internal/capability"
)

// EnsureJobService starts prism's job service in this process before the
// job, as prism's runner would inside beam.Run, and sets --endpoint to it
// (and --environment_type to loopback unless set), so that the launcher
// knows the address (to read the job's metrics, cancel it, serve prism's
// UI) without racing beam.Run for the flag that holds it. It does nothing
// when --endpoint is set or the runner is not prism: on Flink or Dataflow
// the endpoint names the runner's own job service.
func EnsureJobService(ctx context.Context, runner string) error {
	if *jobopts.Endpoint != "" || !capability.IsPrism(runner) {
		return nil
	}
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		return fmt.Errorf("prism: pick a port for the job service: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if _, err := prism.CreateJobServer(ctx, prism.Options{Port: port}); err != nil {
		return fmt.Errorf("prism: start the job service: %w", err)
	}
	*jobopts.Endpoint = fmt.Sprintf("localhost:%d", port)
	if *jobopts.EnvironmentType == "" {
		*jobopts.EnvironmentType = "loopback" // as prism's runner defaults it
	}
	return nil
}
