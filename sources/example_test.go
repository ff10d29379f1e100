package sources_test

import (
	"fmt"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sources"
)

// A launcher validates the folder and the options before any work, then
// feeds the records to the revenue graph.
func ExampleReadFolder() {
	const dir = "/var/log/purchases"
	o := pipeline.Defaults()
	src := sources.FolderOptions{
		Follow:       true,
		Watermark:    o.Watermark,
		Event:        o.Event,
		PollInterval: time.Second,
		// The readers stop gracefully once this run's stop object exists.
		Stop: sources.NewStopSignal(dir + "/_control"),
	}
	if err := sources.Validate(dir, src); err != nil {
		fmt.Println(err)
		return
	}
	p, s := beam.NewPipelineWithRoot()
	records, _ := sources.ReadFolder(s, dir, src)
	if _, err := pipeline.Build(s, records, o); err != nil {
		fmt.Println(err)
		return
	}
	_ = p // run it; on SIGINT call src.Stop.Request, wait for the output to settle, then cancel the job
}

func ExampleValidate() {
	o := pipeline.Defaults()
	err := sources.Validate("hdfs://namenode/raw", sources.FolderOptions{Watermark: o.Watermark, Event: o.Event})
	fmt.Println(err)
	// Output: --source=hdfs://namenode/raw: no filesystem serves hdfs:// paths (this build serves local paths, gs://, s3:// and memfs://)
}
