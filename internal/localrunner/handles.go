package localrunner

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Handles shares one reference-counted handle per key among the DoFn
// instances of this process, for handles holding state (the jsonl and console
// sinks' revision guard) in prism's loopback. Correctness must not rest on it.
// The zero value is ready.
type Handles[K comparable, V io.Closer] struct {
	mu sync.Mutex
	m  map[K]*handle[V]
}

type handle[V io.Closer] struct {
	v    V
	refs int
}

// Acquire returns the process's handle for key, opening it with open on
// first use.
func (h *Handles[K, V]) Acquire(key K, open func() (V, error)) (V, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.m[key]; ok {
		e.refs++
		return e.v, nil
	}
	v, err := open()
	if err != nil {
		var zero V
		return zero, err
	}
	if h.m == nil {
		h.m = map[K]*handle[V]{}
	}
	h.m[key] = &handle[V]{v: v, refs: 1}
	return v, nil
}

// Release drops one reference and closes the handle with the last one.
func (h *Handles[K, V]) Release(key K) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.m[key]
	if !ok {
		return nil
	}
	if e.refs--; e.refs > 0 {
		return nil
	}
	delete(h.m, key)
	return e.v.Close()
}

// CloseAll closes every handle still held, since Teardown is not promised;
// call it only after the run returned.
func (h *Handles[K, V]) CloseAll() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for key, e := range h.m {
		if err := e.v.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %v: %w", key, err))
		}
		delete(h.m, key)
	}
	return errors.Join(errs...)
}

// LastWrite is when a DoFn of this process last committed output, which a
// loopback launcher waits to settle before it cancels a job. The zero value
// is ready.
type LastWrite struct{ ns atomic.Int64 }

// Note records a write now.
func (l *LastWrite) Note() { l.ns.Store(time.Now().UnixNano()) }

// Time returns when the last write was noted, the zero time if none was.
func (l *LastWrite) Time() time.Time {
	ns := l.ns.Load()
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
