package reconcile

import "github.com/revenue-stream/hourly/triggers"

// Totals are a window key's recomputed sums.
type Totals struct {
	// RevenueMicros and Count cover every distinct valid event.
	RevenueMicros, Count int64
	// TooLateRevenueMicros and TooLateCount are the part the stream judged too late and never
	// counted.
	TooLateRevenueMicros, TooLateCount int64
}

// Add sums two totals exactly, refusing to wrap around.
func (t Totals) Add(o Totals) (Totals, error) {
	var err error
	if t.RevenueMicros, err = triggers.AddMicros(t.RevenueMicros, o.RevenueMicros); err != nil {
		return Totals{}, err
	}
	if t.TooLateRevenueMicros, err = triggers.AddMicros(t.TooLateRevenueMicros, o.TooLateRevenueMicros); err != nil {
		return Totals{}, err
	}
	t.Count += o.Count
	t.TooLateCount += o.TooLateCount
	return t, nil
}
