package launch

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"
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

// sizeValue is a byte count: a plain number of bytes or a number with a
// binary (KiB, MiB, GiB) or decimal (kB, MB, GB) unit.
type sizeValue struct{ n *int }

func (v sizeValue) String() string {
	if v.n == nil {
		return ""
	}
	return formatSize(*v.n)
}

// maxLineLimit caps --max-line: a reader holds a whole line in memory, and a
// line of more than 1 GiB is not an event.
const maxLineLimit = 1 << 30

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first, so "KiB" is not read as "B".
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1000}, {"mb", 1000 * 1000}, {"gb", 1000 * 1000 * 1000},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

func (v sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*v.n = n
	return nil
}

func parseSize(s string) (int, error) {
	text := strings.TrimSpace(s)
	lower := strings.ToLower(text)
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mult = strings.TrimSpace(strings.TrimSuffix(lower, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q: want bytes or a size like 512KiB or 1MiB", s)
	}
	if n > math.MaxInt64/mult || n*mult > maxLineLimit {
		return 0, fmt.Errorf("size %q is too large: at most 1GiB", s)
	}
	return int(n * mult), nil
}

// formatSize renders a byte count in the largest binary unit that divides it.
func formatSize(n int) string {
	switch {
	case n > 0 && n%(1<<30) == 0:
		return strconv.Itoa(n>>30) + "GiB"
	case n > 0 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n > 0 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n)
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
