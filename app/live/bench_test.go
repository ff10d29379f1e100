package live_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/app/live"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sinks/sqlite"
)

// wholeReader hides the SQLite sink's RecentReader: the monitor then reads
// the whole changelog at every refresh, as it did before.
type wholeReader struct{ sink.Reader }

// BenchmarkMonitorRefresh: one refresh of the live views over a SQLite sink
// holding 30 days of hourly windows with 20 dims values, 3 revisions each
// (14,400 keys, 43,200 changelog rows), reading the whole changelog or only
// from the oldest key shown.
//
//	go test ./app/live -run X -bench MonitorRefresh -count 5
func BenchmarkMonitorRefresh(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "revenue.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const hour = int64(time.Hour / time.Millisecond)
	var rows []model.Row
	for h := range int64(30 * 24) {
		for d := range 20 {
			for rev, st := range []model.ResultState{model.Early, model.OnTime, model.Final} {
				ws := window + h*hour
				rows = append(rows, model.Row{WindowStart: ws, WindowEnd: ws + hour, Dims: fmt.Sprintf(`{"shop":"s%02d"}`, d),
					RevenueMicros: int64(rev+1) * 1000, EventCount: int64(rev + 1), Revision: int64(rev + 1), State: st, Writer: "stream"})
			}
		}
	}
	if _, err := db.Write(ctx, sink.Batch{Rows: rows}); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		reader sink.Reader
	}{{"whole", wholeReader{db}}, {"bounded", db}} {
		b.Run(bc.name, func(b *testing.B) {
			c := &clock{t0}
			// One refresh of the changelog a second on the monitor's clock;
			// the audit tables are not what is measured.
			mon := &live.Monitor{Reader: bc.reader, Now: c.now, AuditEvery: 1 << 62}
			if s := mon.Snapshot(ctx); len(s.Windows) != 8 || s.Keys != 30*24*20 {
				b.Fatalf("%d windows, %d keys", len(s.Windows), s.Keys)
			}
			b.ResetTimer()
			for b.Loop() {
				c.t = c.t.Add(time.Second) // past MaxAge
				if s := mon.Snapshot(ctx); len(s.Windows) != 8 {
					b.Fatalf("%d windows", len(s.Windows))
				}
			}
		})
	}
}
