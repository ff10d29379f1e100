package event

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults from SPEC §2 and §3.
const (
	DefaultMaxFuture = 10 * time.Minute
	DefaultMaxLine   = 1 << 20
)

// Config holds the validation settings; [Parse] trusts a Config that passed
// [Config.Validate].
type Config struct {
	// Dimensions are the payload fields reported as dimensions (--dimensions).
	Dimensions []string
	// MaxFuture quarantines an event_time more than this ahead of
	// Record.ReadAt (--max-future), so it never advances a watermark.
	MaxFuture time.Duration
	// MaxAge, when positive, quarantines an event older than
	// Record.WatermarkBefore - MaxAge (--max-age), so replays agree.
	MaxAge time.Duration
	// MaxLine is the longest accepted line in bytes (--max-line).
	MaxLine int
}

// DefaultConfig returns the SPEC defaults: no dimensions, --max-future=10m,
// --max-age off, --max-line=1MiB.
func DefaultConfig() Config {
	return Config{MaxFuture: DefaultMaxFuture, MaxLine: DefaultMaxLine}
}

// requiredFields are the input fields of SPEC §3, never dimensions.
var requiredFields = [...]string{"event_id", "event_time", "user_id", "amount"}

// Validate reports the first invalid setting, naming its flag (SPEC §6).
func (c Config) Validate() error {
	if c.MaxFuture <= 0 {
		return fmt.Errorf("--max-future must be positive, got %v", c.MaxFuture)
	}
	if c.MaxAge < 0 {
		return fmt.Errorf("--max-age must not be negative (0 turns it off), got %v", c.MaxAge)
	}
	if c.MaxLine <= 0 {
		return fmt.Errorf("--max-line must be positive, got %d", c.MaxLine)
	}
	for i, name := range c.Dimensions {
		if err := validateDimensionName(name); err != nil {
			return fmt.Errorf("--dimensions: field %d: %w", i+1, err)
		}
		if slices.Contains(c.Dimensions[:i], name) {
			return fmt.Errorf("--dimensions: field %q is listed twice", name)
		}
	}
	return nil
}

// validateDimensionName rejects names that cannot be what the user meant
// (",,", "a, b", control characters, bad UTF-8, a required field).
func validateDimensionName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty field name")
	case !utf8.ValidString(name):
		return fmt.Errorf("field name %q is not valid UTF-8", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("field name %q has surrounding whitespace", name)
	case hasControl(name):
		return fmt.Errorf("field name %q contains a control character", name)
	}
	if slices.Contains(requiredFields[:], name) {
		return fmt.Errorf("field %q is a required input field, not a dimension", name)
	}
	return nil
}

// hasControl reports whether s contains an ASCII control character.
func hasControl[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return true
		}
	}
	return false
}
