package sink_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/console"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// It imports the console backend only: TestPublishedUnregistered needs the
// others unregistered.

func TestWriteConsolePrintsOneTablePerBundle(t *testing.T) {
	var out bytes.Buffer
	f := sink.NewRowWriter(console.New(&out))
	f.ProcessElement(sinktest.Snapshot(sinktest.T10, 150, 2, 1, model.OnTime))
	f.ProcessElement(sinktest.Snapshot(sinktest.T10+sinktest.Hour, 1, 1, 1, model.OnTime))
	if err := f.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.ProcessElement(sinktest.Snapshot(sinktest.T10, 170, 3, 2, model.Late))
	if err := f.FinishBundle(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Count(text, "Batch: ") != 2 || !strings.Contains(text, "Batch: 1") || !strings.Contains(text, "170.000000") {
		t.Errorf("console output:\n%s\nwant two batches, the second with the LATE row", text)
	}
}
