package localrunner

import (
	"context"
	"fmt"
	"net"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/revenue-stream/hourly/internal/capability"
)

// EnsureJobService starts prism's job service before the job and sets
// --endpoint (and --environment_type=loopback unless set), so the launcher
// knows the address without racing beam.Run. It does nothing when --endpoint
// is set or the runner is not prism. It raises GOMAXPROCS (procs.go).
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
	inProcess() // prism runs in this process now
	if *jobopts.EnvironmentType == "" {
		*jobopts.EnvironmentType = "loopback" // as prism's runner defaults it
	}
	return nil
}
