package bigquery

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

var _ sinktest.LatestReader = (*BigQuery)(nil)

func TestBigQueryProgress(t *testing.T) {
	sinktest.ProgressConformance(t, func(t *testing.T) sinktest.ProgressUnder {
		s := openTestBigQuery(t)
		return sinktest.ProgressUnder{W: s, P: s, Prunes: true, ResumeStored: func(t *testing.T) string {
			return strconv.FormatInt(bqScalar(t, s, "SELECT COUNT(*) AS n FROM "+s.table(table.SourceResume.Name)), 10)
		}}
	})
}

func TestBigQueryLatestAudit(t *testing.T) { sinktest.LatestAudit(t, openTestBigQuery(t)) }

func TestBigQueryChangelogEntries(t *testing.T) { sinktest.ChangelogEntries(t, openTestBigQuery(t)) }

// TestMain runs the write step's tests on prism (ptest's default runner);
// the plain-Go sink tests of this package do not notice.
func TestMain(m *testing.M) {
	os.Exit(ptest.MainRet(m))
}

// fakeSink makes b the sink every write step of this process gets.
func fakeSink(t *testing.T, b *BigQuery) {
	acquire = func(context.Context, sink.Spec) (sink.Sink, error) { return b, nil }
	t.Cleanup(func() { acquire = sink.Acquire })
}
