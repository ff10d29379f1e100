package main

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
)

// beamPrefix is the package path prefix of Beam's own code (prism, harness).
const beamPrefix = "github.com/apache/beam/"

// newLogger logs ours at level and Beam's (prism's job chatter, the
// harness's) from warn, or everything at debug: the same split cmd/launch
// makes, so the two commands read alike. (launch/logging.go has the same
// filter; a shared package for both commands' plumbing would hold one.)
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	beam := max(level, slog.LevelWarn)
	if level <= slog.LevelDebug {
		beam = level
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: min(level, beam)})
	return slog.New(&originFilter{Handler: h, ours: level, beam: beam})
}

// originFilter applies a separate level to records logged from Beam's
// packages, told apart by the caller's program counter: prism's records
// carry no attribute that would identify them.
type originFilter struct {
	slog.Handler
	ours, beam slog.Level
}

func (f *originFilter) Handle(ctx context.Context, r slog.Record) error {
	floor := f.ours
	if fromBeam(r.PC) {
		floor = f.beam
	}
	if r.Level < floor {
		return nil
	}
	return f.Handler.Handle(ctx, r)
}

func (f *originFilter) WithAttrs(as []slog.Attr) slog.Handler {
	return &originFilter{Handler: f.Handler.WithAttrs(as), ours: f.ours, beam: f.beam}
}

func (f *originFilter) WithGroup(name string) slog.Handler {
	return &originFilter{Handler: f.Handler.WithGroup(name), ours: f.ours, beam: f.beam}
}

// fromBeam reports whether a record comes from Beam. A record without a
// program counter comes through the standard log package, which the SDK's
// fallback loggers use; this project logs through slog only.
func fromBeam(pc uintptr) bool {
	if pc == 0 {
		return true
	}
	frame, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return strings.HasPrefix(frame.Function, beamPrefix)
}
