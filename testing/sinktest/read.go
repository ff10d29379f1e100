package sinktest

import (
	"context"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// CurrentRows is the current row of every key s holds, as sink.Rows gives
// it (with any UnreadableRows error).
func CurrentRows(ctx context.Context, s sink.Reader) ([]model.Row, error) {
	return sink.Rows(s.Changelog(ctx, sink.Query{Current: true}))
}

// ChangelogRows is every revision s holds, without written_at.
func ChangelogRows(ctx context.Context, s sink.Reader) ([]model.Row, error) {
	return sink.Rows(s.Changelog(ctx, sink.Query{}))
}

// TooLate, Conflicts and Quarantined are one audit table of s.Audit.
func TooLate(ctx context.Context, s sink.Reader) ([]model.TooLate, error) {
	a, err := s.Audit(ctx)
	return a.TooLate, err
}

func Conflicts(ctx context.Context, s sink.Reader) ([]model.Conflict, error) {
	a, err := s.Audit(ctx)
	return a.Conflicts, err
}

func Quarantined(ctx context.Context, s sink.Reader) ([]model.Quarantined, error) {
	a, err := s.Audit(ctx)
	return a.Quarantined, err
}
