// Package cli is what the commands (cmd/launch, cmd/reconcile, cmd/advise)
// share: the flag table and binder, --help, the command shape, the dry run
// and the logger that keeps Beam's own logs quiet.
package cli

import (
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/revenue-stream/hourly/internal/slicesx"
	"github.com/revenue-stream/hourly/watermark"
)

// The values below bind a flag to a typed field; FlagSet prefixes their errors with the flag.

// String binds a string.
func String(p *string) Value[string] {
	return Func(p, "VALUE", func(s string) (string, error) { return s, nil }, func(s string) string { return s })
}

// Duration binds a time.Duration.
func Duration(p *time.Duration) Value[time.Duration] {
	return Func(p, "DURATION", func(s string) (time.Duration, error) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return d, nil
	}, FormatDuration)
}

// FormatDuration renders d without zero trailing units: 1h, 10m, 1h30m, 2m30s, 500ms.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Count binds a positive integer.
func Count(p *int) Value[int] {
	return intValue(p, "N", "count", func(n int) bool { return n > 0 }, "want a positive integer")
}

// Int binds an integer (the command validates its range).
func Int(p *int) Value[int] {
	return intValue(p, "N", "integer", func(int) bool { return true }, "want an integer")
}

// Port binds a TCP port, 1 to 65535.
func Port(p *int) Value[int] {
	return intValue(p, "PORT", "port", func(n int) bool { return n >= 1 && n <= 65535 }, "want 1 to 65535")
}

// Tally binds a count that may be 0.
func Tally(p *int64) Value[int64] {
	return intValue(p, "N", "count", func(n int64) bool { return n >= 0 }, "want 0 or more")
}

func intValue[N int | int64](p *N, arg, noun string, ok func(N) bool, want string) Value[N] {
	return Func(p, arg, func(s string) (N, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || int64(N(n)) != n || !ok(N(n)) {
			return 0, fmt.Errorf("invalid %s %q: %s", noun, s, want)
		}
		return N(n), nil
	}, func(n N) string { return strconv.FormatInt(int64(n), 10) })
}

// Float binds a finite number (the command validates its range): NaN and infinities are refused,
// since no range check a command writes can catch a NaN.
func Float(p *float64) Value[float64] {
	return Func(p, "X", func(s string) (float64, error) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("invalid number %q: want a finite number", s)
		}
		return f, nil
	}, func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) })
}

// Size binds a byte count: plain bytes or a number with a unit (ParseSize).
func Size(p *int) Value[int] { return Func(p, "SIZE", ParseSize, FormatSize) }

// List binds a comma-separated list; empty or padded items are kept for validation to name.
func List(p *[]string) Value[[]string] {
	return Func(p, "A,B,...", func(s string) ([]string, error) {
		if s == "" {
			return nil, nil
		}
		return strings.Split(s, ","), nil
	}, func(l []string) string { return strings.Join(l, ",") })
}

// ListOf binds a comma-separated list of what parse reads, items trimmed; "" is the empty list if
// empty is set.
func ListOf[T any](p *[]T, arg, noun string, empty bool, parse func(string) (T, error), format func(T) string) Value[[]T] {
	return Func(p, arg, func(s string) ([]T, error) {
		if s == "" && empty {
			return nil, nil
		}
		var out []T
		for _, f := range strings.Split(s, ",") {
			v, err := parse(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("invalid %s %q in %q", noun, f, s)
			}
			out = append(out, v)
		}
		return out, nil
	}, func(vs []T) string {
		return strings.Join(slicesx.Map(vs, format), ",")
	})
}

// Level binds a log level.
func Level(p *slog.Level) Value[slog.Level] {
	return Func(p, "LEVEL", func(s string) (slog.Level, error) {
		switch strings.ToLower(s) {
		case "debug":
			return slog.LevelDebug, nil
		case "info":
			return slog.LevelInfo, nil
		case "warn", "warning":
			return slog.LevelWarn, nil
		case "error":
			return slog.LevelError, nil
		}
		return 0, fmt.Errorf("invalid level %q: want debug, info, warn or error", s)
	}, func(l slog.Level) string { return strings.ToLower(l.String()) })
}

// IdleAdvance binds a watermark.IdleAdvance mode.
func IdleAdvance(p *watermark.IdleAdvance) Value[watermark.IdleAdvance] {
	return Func(p, "MODE", watermark.ParseIdleAdvance, watermark.IdleAdvance.String)
}

// Bool binds a switch (--follow, or --follow=false).
func Bool(p *bool) Value[bool] {
	return Switch(p, func(s string) (bool, error) {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false, fmt.Errorf("invalid boolean %q", s)
		}
		return b, nil
	}, strconv.FormatBool)
}

// Switch is Func for a flag that may stand alone: the flag package then sets "true".
func Switch[T any](p *T, parse func(string) (T, error), format func(T) string) Value[T] {
	v := Func(p, "", parse, format)
	v.isBool = true
	return v
}

// Func binds a field of any type through its own parser and formatter; arg names it in --help.
func Func[T any](p *T, arg string, parse func(string) (T, error), format func(T) string) Value[T] {
	return Value[T]{p: p, arg: arg, parse: parse, format: format}
}

// Value is a flag.Value over a typed field.
type Value[T any] struct {
	p      *T
	arg    string
	parse  func(string) (T, error)
	format func(T) string
	isBool bool // a Switch
}

func (v Value[T]) String() string {
	if v.p == nil {
		return ""
	}
	return v.format(*v.p)
}

func (v Value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

// Arg names the value in --help.
func (v Value[T]) Arg() string { return v.arg }

func (v Value[T]) IsBoolFlag() bool { return v.isBool }

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

// ParseSize reads a byte count: plain bytes or a number with a unit
// (KiB, MiB, GiB, KB, MB, GB, K, M, G, B; case-insensitive), at most 1 GiB.
func ParseSize(s string) (int, error) {
	n, mult, err := SplitSize(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q: want bytes or a size like 512KiB or 1MiB", s)
	}
	if n > math.MaxInt64/mult || n*mult > maxLineLimit {
		return 0, fmt.Errorf("size %q is too large: at most 1GiB", s)
	}
	return int(n * mult), nil
}

// SplitSize reads a size as its number and its unit's multiplier (1 without a unit), unchecked.
func SplitSize(s string) (n, mult int64, err error) {
	lower, mult := strings.ToLower(strings.TrimSpace(s)), int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mult = strings.TrimSpace(strings.TrimSuffix(lower, u.suffix)), u.mult
			break
		}
	}
	n, err = strconv.ParseInt(lower, 10, 64)
	return n, mult, err
}

// FormatSize renders a byte count in the largest binary unit that divides it.
func FormatSize(n int) string {
	for i := 3; i > 0 && n > 0; i-- {
		if n%(1<<(10*i)) == 0 {
			return strconv.Itoa(n>>(10*i)) + [...]string{"", "KiB", "MiB", "GiB"}[i]
		}
	}
	return strconv.Itoa(n)
}
