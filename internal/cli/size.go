// Package cli is what the commands (cmd/launch, cmd/reconcile, cmd/advise)
// share: the flag table and binder, --help, the command shape, the dry run
// and the logger that keeps Beam's own logs quiet.
package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

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
