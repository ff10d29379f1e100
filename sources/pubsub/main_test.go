package pubsub

import (
	"os"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

func TestMain(m *testing.M) {
	if os.Getenv("DEBUG_PRISM") != "" {
		beamlog.LogLevel, beamlog.LogKind = "debug", "text"
		beamlog.SetupLoggingWithDefault()
	}
	// Lets a test subscription expire an unacknowledged message in a second
	// or two instead of pstest's default minimum of ten.
	pstest.SetMinAckDeadline(time.Second)
	os.Exit(ptest.MainRet(m))
}
