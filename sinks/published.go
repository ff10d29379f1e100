package sinks

import (
	"strings"

	"github.com/revenue-stream/hourly/model"
)

// secondPrefix is ms's whole second as text ("2026-11-04T10:00:00"): a safe
// TEXT pre-filter, since full renderings put "10:00:00.500Z" before "10:00:00Z".
func secondPrefix(ms int64) string {
	s := model.FormatTime(ms - ((ms%1000)+1000)%1000)
	return strings.TrimSuffix(s, "Z")
}
