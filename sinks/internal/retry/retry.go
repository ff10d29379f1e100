// Package retry retries an operation that may fail for a while: the write
// verbs' batches, SQLite's busy transactions and BigQuery's calls.
package retry

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Retrier says how often, after which waits and for which errors.
type Retrier struct {
	Attempts  int
	Retryable func(error) bool // nil: every error
	Wait      func(attempt int) time.Duration
	Sleep     func(context.Context, time.Duration) error // nil: Sleep
	// Each retry is logged at Level as Msg, Attrs, then the attempt.
	Level slog.Level
	Msg   string
	Attrs []any
}

// Do calls try until it succeeds, fails with an error r.Retryable refuses or
// has been called r.Attempts times, and returns the calls made and the last
// error; when ctx ends during a wait, ctx's error after it.
func (r Retrier) Do(ctx context.Context, try func() error) (int, error) {
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || attempt >= r.Attempts || r.Retryable != nil && !r.Retryable(err) {
			return attempt, err
		}
		wait, sleep := r.Wait(attempt), r.Sleep
		if sleep == nil {
			sleep = Sleep
		}
		slog.Log(ctx, r.Level, r.Msg, slices.Concat(r.Attrs, []any{"attempt", attempt, "wait", wait, "err", err})...)
		if serr := sleep(ctx, wait); serr != nil {
			return attempt, fmt.Errorf("%w (after %w)", serr, err)
		}
	}
}

// Quadratic waits attempt² × 200 ms.
func Quadratic(attempt int) time.Duration {
	return time.Duration(attempt*attempt) * 200 * time.Millisecond
}

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
