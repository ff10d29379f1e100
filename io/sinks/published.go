package sinks

import (
	"strings"

	"github.com/revenue-stream/hourly/model"
)

// secondPrefix is the text every RFC 3339 rendering (model.FormatTime) of
// an instant at or after ms's whole second starts with or sorts after, and
// every earlier one sorts before: "2026-11-04T10:00:00". Comparing the
// full renderings would misorder "10:00:00.500Z" before "10:00:00Z", so a
// TEXT range on it is a safe pre-filter, and the exact one is done on the
// parsed times.
func secondPrefix(ms int64) string {
	s := model.FormatTime(ms - ((ms%1000)+1000)%1000)
	return strings.TrimSuffix(s, "Z")
}
