package cli

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
)

// beamPrefix is the package path prefix of the SDK and prism, whose info
// lines in loopback mode are noise in a command's output.
const beamPrefix = "github.com/apache/beam/"

// NewLogger returns a text logger to w that applies level to this project's records and max(level,
// warn) to Beam's, unless level is debug, which shows everything.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	beam := max(level, slog.LevelWarn)
	if level <= slog.LevelDebug {
		beam = level
	}
	h := slog.NewTextHandler(w, &slog.HandlerOptions{Level: min(level, beam)})
	return slog.New(&originFilter{Handler: h, ours: level, beam: beam})
}

// originFilter applies a separate level to records logged from Beam's packages, told apart by the
// caller's program counter: prism's records carry no attribute that would identify them.
type originFilter struct {
	slog.Handler
	ours, beam slog.Level
}

func (f *originFilter) Handle(ctx context.Context, r slog.Record) error {
	min := f.ours
	if fromBeam(r.PC) {
		min = f.beam
		if strings.Contains(r.Message, "code = Canceled") {
			// When a job ends the SDK harness's state and data streams are cancelled, and whichever
			// of its readers sees the cancellation before the stream's end logs it as an error
			// ("StateChannel[..].read bad: rpc error: code = Canceled"): a race at shutdown, not a
			// failure; the cancellation that caused it is reported where it was made. Debug only.
			r.Level = slog.LevelDebug
		}
	}
	if r.Level < min {
		return nil
	}
	return f.Handler.Handle(ctx, r)
}

func (f *originFilter) WithAttrs(as []slog.Attr) slog.Handler { return f.with(f.Handler.WithAttrs(as)) }
func (f *originFilter) WithGroup(name string) slog.Handler    { return f.with(f.Handler.WithGroup(name)) }
func (f *originFilter) with(h slog.Handler) slog.Handler      { return &originFilter{h, f.ours, f.beam} }

// fromBeam reports whether a record comes from Beam. A record without a program counter comes
// through the standard log package, which slog redirects to the default handler: the SDK's fallback
// loggers use it (the harness logs "stopping worker" there when its log stream closes). This
// project logs through slog only, so such records count as Beam's.
func fromBeam(pc uintptr) bool {
	if pc == 0 {
		return true
	}
	frame, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	return strings.HasPrefix(frame.Function, beamPrefix)
}
