package cli

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

// A Beam record of a stream cancelled at a job's end (the harness's
// "StateChannel[..].read bad" race) is debug, shown only at --log-level=debug;
// Beam's other errors and this project's records with the same words are not
// touched.
func TestCanceledStreamsAreDebug(t *testing.T) {
	const canceled = "[SDK] StateChannel[localhost:40949].read bad: rpc error: code = Canceled desc = context canceled"
	for _, c := range []struct {
		level     slog.Level
		fromBeam  bool
		msg       string
		wantShown bool
		wantLevel string
	}{
		{slog.LevelWarn, true, canceled, false, ""},
		{slog.LevelDebug, true, canceled, true, "DEBUG"},
		{slog.LevelWarn, true, "[SDK] StateChannel[x].read bad: rpc error: code = Unavailable", true, "ERROR"},
		{slog.LevelWarn, false, canceled, true, "ERROR"},
	} {
		var out bytes.Buffer
		h := NewLogger(&out, c.level).Handler()
		r := slog.NewRecord(time.Now(), slog.LevelError, c.msg, ourPC(t))
		if c.fromBeam {
			r.PC = beamPC(t)
		}
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if shown := got != ""; shown != c.wantShown || (shown && !strings.Contains(got, "level="+c.wantLevel)) {
			t.Errorf("level %v, from Beam %v, %q: logged %q; want shown %v at %s", c.level, c.fromBeam, c.msg, got, c.wantShown, c.wantLevel)
		}
	}
}

// ourPC is a program counter in this project.
func ourPC(t *testing.T) uintptr {
	var pcs [1]uintptr
	runtime.Callers(1, pcs[:])
	if fromBeam(pcs[0]) {
		t.Fatal("this test's own program counter counts as Beam's")
	}
	return pcs[0]
}

// beamPC is a program counter in a Beam package: inside beam/log's Errorf
// (a function's entry + 1, as CallersFrames reads a return address).
func beamPC(t *testing.T) uintptr {
	pc := reflect.ValueOf(beamlog.Errorf).Pointer() + 1
	if !fromBeam(pc) {
		t.Fatal("beam/log's program counter does not count as Beam's")
	}
	return pc
}
