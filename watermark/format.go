package watermark

import (
	"fmt"

	"github.com/revenue-stream/hourly/model"
)

// FormatMs renders a watermark (epoch ms) for logs, or "none" for
// model.NoWatermark.
func FormatMs(ms int64) string {
	if ms == model.NoWatermark {
		return "none"
	}
	return model.FormatTime(ms)
}

func (s State) String() string {
	return fmt.Sprintf("maxValid=%s idle=%v reported=%s holding=%v", FormatMs(s.MaxValid), s.Idle, FormatMs(s.Reported), s.Holding)
}
