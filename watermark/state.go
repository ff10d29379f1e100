package watermark

import (
	"fmt"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/model"
)

// State is what a reader carries in its restriction so that a checkpoint, or
// another worker, resumes the partition's watermark exactly (Resume).
type State struct {
	// MaxValid is the largest valid event time (ms), or model.NoWatermark.
	MaxValid int64
	// LastActive is the processing time (ms) of the last record.
	LastActive int64
	// Idle says the partition was idle at the last report.
	Idle bool
	// Reported is the last watermark handed to the runner.
	Reported int64
	// Holding and Hold are the backlog hold (Partition.Backlog).
	Holding bool
	Hold    int64
}

// NewState is the state of a partition that has read nothing, idle-timed from now (ms).
func NewState(now int64) State {
	return State{MaxValid: model.NoWatermark, LastActive: now, Reported: model.NoWatermark}
}

// Encode appends the state to a restriction's encoding.
func (s State) Encode(w *coders.Writer) {
	w.Varint(s.MaxValid)
	w.Varint(s.LastActive)
	w.Bool(s.Idle)
	w.Varint(s.Reported)
	w.Bool(s.Holding)
	w.Varint(s.Hold)
}

// DecodeState reads what Encode wrote.
func DecodeState(r *coders.Reader) State {
	return State{MaxValid: r.Varint(), LastActive: r.Varint(), Idle: r.Bool(), Reported: r.Varint(),
		Holding: r.Bool(), Hold: r.Varint()}
}

func (s State) String() string {
	return fmt.Sprintf("maxValid=%s idle=%v reported=%s holding=%v", FormatMs(s.MaxValid), s.Idle, FormatMs(s.Reported), s.Holding)
}

// FormatMs renders a watermark (epoch ms) for logs, or "none" for
// model.NoWatermark.
func FormatMs(ms int64) string {
	if ms == model.NoWatermark {
		return "none"
	}
	return model.FormatTime(ms)
}
