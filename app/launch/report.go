package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/pipeline"
)

// writeReport writes the run report (--report): the job, its settings and figures, the watermark
// per partition traced from the raw log (or archive), every key's revisions and the audit sizes.
func writeReport(path string, s *Summary, po pipeline.Options) error {
	run := report.Run{
		Title:    "Hourly revenue: " + s.Source,
		Started:  s.Started,
		Finished: s.Started.Add(s.Duration),
		Settings: s.Settings,
		Job:      s.jobFigures(),
	}
	// Zero Counts pass Check: not conserved with them means no metrics.
	if s.Conserved || s.Counts.Check() != nil {
		c := s.Counts
		run.Counts = &c
	}
	if v := s.view; v.Readable {
		changelog, err := v.changelog(context.Background())
		if err != nil {
			return fmt.Errorf("report %s: %w", path, err)
		}
		run.Windows = report.WindowsFromChangelog(changelog)
		run.Audit = &report.Audit{TooLate: int(v.Tally.TooLate), Conflicts: int(v.Tally.Conflicts), Quarantined: int(v.Tally.Quarantined)}
	}
	// An archive that does not exist (nothing was pulled) has no trace.
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

// jobFigures is what the report says about the job itself.
func (s *Summary) jobFigures() []report.Figure {
	source := s.Source
	if s.Demo {
		source += " (demo)"
	}
	f := []report.Figure{{Name: "source", Value: source}}
	add := func(name, value string) {
		if value != "" {
			f = append(f, report.Figure{Name: name, Value: value})
		}
	}
	add("archive", s.Archive)
	add("sink", s.Sink)
	add("runner", s.Runner)
	add("job", s.JobID)
	add("state", s.State)
	if s.Interrupted {
		add("interrupted", "readers stopped and the job was cancelled; no window was made FINAL early")
	}
	add("error", s.Error)
	add("query", s.view.Query)
	return f
}
