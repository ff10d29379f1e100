package localrunner

import (
	"sync"
	"testing"
)

func TestShared(t *testing.T) {
	s := NewShared(func() *int { return new(int) })
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				s.With("a", func(n *int) { *n++ })
			}
		}()
	}
	wg.Wait()
	s.With("b", func(n *int) { *n-- })
	var a, b int
	s.With("a", func(n *int) { a = *n })
	s.With("b", func(n *int) { b = *n })
	if a != 800 || b != -1 {
		t.Errorf("a = %d, b = %d, want 800 and -1: keys must not mix, updates not be lost", a, b)
	}
}
