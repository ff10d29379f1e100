package launch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	jobpb "github.com/apache/beam/sdks/v2/go/pkg/beam/model/jobmanagement_v1"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// prismUI records the ports prism's web UI (--prism-ui-port) is served on: the in-process runner
// starts none, prism.CreateWebServer serves one over a job service client.
var prismUI struct {
	mu      sync.Mutex
	started map[int]bool
}

// startPrismUI serves prism's web UI on localhost:port for the job service at *jobopts.Endpoint,
// once per port and process.
func startPrismUI(port int) error {
	prismUI.mu.Lock()
	defer prismUI.mu.Unlock()
	if prismUI.started[port] {
		return nil
	}
	addr := fmt.Sprintf("localhost:%d", port)
	// prism's web server logs a failed listen and goes on: check first.
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--prism-ui-port=%d: %w", port, err)
	}
	l.Close()
	conn, err := grpc.NewClient(*jobopts.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("--prism-ui-port: connect to the job service at %s: %w", *jobopts.Endpoint, err)
	}
	if err := prism.CreateWebServer(context.Background(), jobpb.NewJobServiceClient(conn), prism.Options{Port: port}); err != nil {
		conn.Close()
		return fmt.Errorf("--prism-ui-port=%d: %w", port, err)
	}
	// The server starts listening in the background: wait until it answers.
	url := "http://" + addr + "/"
	client := http.Client{Timeout: time.Second}
	var last error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if prismUI.started == nil {
				prismUI.started = map[int]bool{}
			}
			prismUI.started[port] = true
			slog.Info("prism web UI: jobs, their state and metrics", "url", url)
			return nil
		}
		last = err
	}
	return fmt.Errorf("--prism-ui-port=%d: the web UI did not come up: %w", port, last)
}
