package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/io/files"
	"github.com/revenue-stream/hourly/pipeline"
)

// writeHTMLReport renders the self-contained HTML run report (package
// report): the watermark against event time per partition, traced from the
// raw log (the folder, or a Pub/Sub source's archive) with the same policy
// the source ran, the arrival-delay histogram, every window's revisions from
// the sink, and the conservation table.
func writeHTMLReport(path string, s *Summary, po pipeline.Options) error {
	run := report.Run{
		Title:       "Hourly revenue: " + s.Source,
		Started:     s.Started,
		Finished:    s.Started.Add(s.Duration),
		Settings:    s.Settings,
		Counts:      s.Counts,
		Windows:     report.WindowsFromChangelog(s.view.Changelog),
		TooLate:     s.view.Audit["too_late_events"],
		Conflicts:   s.view.Audit["conflict_events"],
		Quarantined: s.view.Audit["quarantined_events"],
	}
	// The raw log to trace: the folder read, or the archive a Pub/Sub
	// source wrote (the same lines in arrival order, with the same policy).
	// An archive that does not exist (nothing was ever pulled) has no trace.
	dir := s.Source
	if s.Archive != "" {
		dir = s.Archive
		if files.CheckDir(context.Background(), dir) != nil {
			dir = ""
		}
	}
	if dir != "" {
		parts, delays, err := report.TraceFolder(dir, po.Watermark, po.Event, time.Now())
		if err != nil {
			return fmt.Errorf("report %s: trace %s: %w", path, dir, err)
		}
		run.Partitions, run.Delays = parts, delays
	}
	return report.Write(path, run)
}
