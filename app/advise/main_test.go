package advise

import (
	"flag"
	"log/slog"
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/internal/cli"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The replay test runs the pipeline: Beam must be initialised, and
	// prism kept quiet as the command keeps it.
	beam.Init()
	slog.SetDefault(cli.NewLogger(os.Stderr, slog.LevelInfo))
	os.Exit(m.Run())
}
