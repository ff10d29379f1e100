package bigquery

import (
	"context"
	"testing"

	"github.com/revenue-stream/hourly/sinks/internal/table"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// A revision whose result_state no writer stores is one unreadable row, as in SQLite: before,
// the first such row failed the whole read.
func TestBigQueryUnreadableRowsNamed(t *testing.T) {
	s := openTestBigQuery(t)
	sinktest.UnreadableRow(t, s, s, "result_state", `revision 2: unknown result_state "DONE"`, func(start string) {
		ctx := context.Background()
		job, err := s.client.Query(`UPDATE ` + s.table(table.HourlyRevenueChangelog.Name) +
			` SET result_state = 'DONE' WHERE window_start = TIMESTAMP '` + start + `'`).Run(ctx)
		if err == nil {
			_, err = job.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}
