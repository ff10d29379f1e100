package launch

import (
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/cli"
	"github.com/revenue-stream/hourly/watermark"
)

// The flag values below refuse bad input in Set with a message that does not
// repeat the flag or the value's name: parse prefixes "--name: " itself, so
// every error reads `--window: invalid duration "x"`.

// durationValue is a time.Duration flag.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q", s)
	}
	*v.d = d
	return nil
}

// countValue is a positive integer flag.
type countValue struct{ n *int }

func (v countValue) String() string {
	if v.n == nil {
		return ""
	}
	return strconv.Itoa(*v.n)
}

func (v countValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return fmt.Errorf("invalid count %q: want a positive integer", s)
	}
	*v.n = n
	return nil
}

// portValue is a TCP port, 1 to 65535.
type portValue struct{ n *int }

func (v portValue) String() string {
	if v.n == nil || *v.n == 0 {
		return ""
	}
	return strconv.Itoa(*v.n)
}

func (v portValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("invalid port %q: want 1 to 65535", s)
	}
	*v.n = n
	return nil
}

// sizeValue is a byte count: a plain number of bytes or a number with a
// binary (KiB, MiB, GiB) or decimal (kB, MB, GB) unit.
type sizeValue struct{ n *int }

func (v sizeValue) Set(s string) error {
	n, err := cli.ParseSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}

func (v sizeValue) String() string {
	if v.n == nil {
		return ""
	}
	return cli.FormatSize(*v.n)
}

// listValue is a comma-separated list. The empty string is the empty list;
// empty or padded items are kept so that validation can name them.
type listValue struct{ items *[]string }

func (v listValue) String() string {
	if v.items == nil {
		return ""
	}
	return strings.Join(*v.items, ",")
}

func (v listValue) Set(s string) error {
	if s == "" {
		*v.items = nil
		return nil
	}
	*v.items = strings.Split(s, ",")
	return nil
}

// levelValue is a log level.
type levelValue struct{ l *slog.Level }

func (v levelValue) String() string {
	if v.l == nil {
		return ""
	}
	return strings.ToLower(v.l.String())
}

func (v levelValue) Set(s string) error {
	switch strings.ToLower(s) {
	case "debug":
		*v.l = slog.LevelDebug
	case "info":
		*v.l = slog.LevelInfo
	case "warn", "warning":
		*v.l = slog.LevelWarn
	case "error":
		*v.l = slog.LevelError
	default:
		return fmt.Errorf("invalid level %q: want debug, info, warn or error", s)
	}
	return nil
}

// captured wraps a flag's Value so that a failing Set leaves its error, named
// by flag, where parse finds it: the flag package only returns a formatted
// string ("invalid value ... for flag -x: ...").
type captured struct {
	flag.Value
	name string
	err  *error
}

func (c captured) Set(s string) error {
	if err := c.Value.Set(s); err != nil {
		*c.err = fmt.Errorf("--%s: %w", c.name, err)
		return err
	}
	return nil
}

// capturedBool keeps a boolean flag usable without a value (--follow).
type capturedBool struct{ captured }

func (c capturedBool) IsBoolFlag() bool { return true }

func capture(name string, v flag.Value, err *error) flag.Value {
	c := captured{Value: v, name: name, err: err}
	if b, ok := v.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return capturedBool{c}
	}
	return c
}

// idleAdvanceValue is --idle-advance (watermark.IdleAdvanceNames).
type idleAdvanceValue struct{ a *watermark.IdleAdvance }

func (v idleAdvanceValue) String() string {
	if v.a == nil {
		return watermark.AdvanceProcessingTime.String()
	}
	return v.a.String()
}

func (v idleAdvanceValue) Set(s string) error {
	a, err := watermark.ParseIdleAdvance(s)
	if err != nil {
		return fmt.Errorf("want processing-time or hold, got %q", s)
	}
	*v.a = a
	return nil
}
