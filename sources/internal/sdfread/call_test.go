package sdfread

import (
	"testing"
	"time"
)

func TestEnded(t *testing.T) {
	for _, c := range []struct {
		stop            bool
		emitted, max    int
		elapsed, budget time.Duration
		want            Outcome
		end             bool
	}{
		{false, 0, 10, 0, time.Second, 0, false},
		{true, 0, 10, 0, time.Second, Stopped, true},
		{true, 10, 10, 0, time.Second, Stopped, true}, // a stop wins
		{false, 10, 10, 0, time.Second, Budget, true},
		{false, 9, 10, time.Second, time.Second, Budget, true},
	} {
		if out, end := Ended(c.stop, c.emitted, c.max, c.elapsed, c.budget); out != c.want || end != c.end {
			t.Errorf("Ended(%+v) = %v, %v", c, out, end)
		}
	}
}

func TestContinue(t *testing.T) {
	const poll = 200 * time.Millisecond
	for out, want := range map[Outcome]struct {
		resume bool
		delay  time.Duration
	}{
		Budget: {true, 0}, CaughtUp: {true, poll}, Stopped: {true, poll}, Retry: {true, time.Second},
		Finished: {false, 0}, Lost: {false, 0},
	} {
		c := Continue(out, poll)
		if c.ShouldResume() != want.resume || (want.resume && c.ResumeDelay() != want.delay) {
			t.Errorf("Continue(%v) = resume %v in %v, want %v in %v", out, c.ShouldResume(), c.ResumeDelay(), want.resume, want.delay)
		}
	}
}
