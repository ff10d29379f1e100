package localrunner

import (
	"errors"
	"testing"
	"time"
)

type closer struct{ closed int }

func (c *closer) Close() error { c.closed++; return nil }

// One handle per key: opened once, closed with the last release, and
// CloseAll closes what is left.
func TestHandles(t *testing.T) {
	var h Handles[string, *closer]
	opens := 0
	open := func() (*closer, error) { opens++; return &closer{}, nil }
	a, err := h.Acquire("x", open)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Acquire("x", open)
	if a != b || opens != 1 {
		t.Fatalf("two handles for one key (%d opens)", opens)
	}
	if err := h.Release("x"); err != nil || a.closed != 0 {
		t.Fatalf("closed with a reference left (err %v)", err)
	}
	if err := h.Release("x"); err != nil || a.closed != 1 {
		t.Fatalf("not closed with the last release: closed %d, err %v", a.closed, err)
	}
	if _, err := h.Acquire("y", func() (*closer, error) { return nil, errors.New("boom") }); err == nil {
		t.Fatal("an open error was not returned")
	}
	c, _ := h.Acquire("y", open)
	if err := h.CloseAll(); err != nil || c.closed != 1 {
		t.Fatalf("CloseAll: closed %d, err %v", c.closed, err)
	}
	if d, _ := h.Acquire("y", open); d == c {
		t.Fatal("CloseAll kept a closed handle")
	}
}

func TestLastWrite(t *testing.T) {
	var l LastWrite
	if !l.Time().IsZero() {
		t.Fatal("LastWrite is set before any write")
	}
	before := time.Now()
	l.Note()
	if got := l.Time(); got.Before(before) || got.After(time.Now()) {
		t.Fatalf("LastWrite = %v, want between %v and now", got, before)
	}
}
