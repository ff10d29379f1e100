package advise

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/revenue-stream/hourly/app/report"
	"github.com/revenue-stream/hourly/internal/delay"
	"github.com/revenue-stream/hourly/internal/files"
)

// JobFigures are what a streaming run measured itself (cmd/launch --report=run.json).
type JobFigures struct {
	Path     string            `json:"path"`
	Settings map[string]string `json:"settings"`
	// Lateness must match the advisor's own count bucket for bucket when the job read this log from
	// its start; Arrival only a live run measures.
	Lateness delay.Histogram `json:"event_lateness"`
	Arrival  delay.Histogram `json:"arrival_delay"`
	// Read, TooLate, Duplicates and Conflicts are the job's own figures.
	Read       int64 `json:"read"`
	TooLate    int64 `json:"too_late"`
	Duplicates int64 `json:"duplicates"`
	Conflicts  int64 `json:"conflicts"`
}

// readJobReport reads a cmd/launch JSON run report.
func readJobReport(path string) (*JobFigures, error) {
	f, err := files.Open(context.Background(), path, 0)
	if err != nil {
		return nil, fmt.Errorf("--job-report: %w", err)
	}
	defer f.Close()
	var doc report.Document
	if err := json.NewDecoder(f).Decode(&doc); err != nil {
		return nil, fmt.Errorf("--job-report %s: not a run report: %w", path, err)
	}
	if doc.Counts == nil {
		return nil, fmt.Errorf("--job-report %s: the run reported no metrics", path)
	}
	c := doc.Counts
	return &JobFigures{Path: path, Settings: doc.Settings, Lateness: c.Lateness, Arrival: c.Arrival,
		Read: c.Read, TooLate: c.TooLate, Duplicates: c.Duplicates, Conflicts: c.Conflicts}, nil
}
