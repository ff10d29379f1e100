package localrunner

import "sync"

// Shared is a process-wide value per key, created on first use and used under
// one lock; each DoFn instance must be able to do without it.
type Shared[T any] struct {
	mu     sync.Mutex
	create func() *T
	m      map[string]*T
}

// NewShared returns an empty Shared whose values create makes.
func NewShared[T any](create func() *T) *Shared[T] {
	return &Shared[T]{create: create, m: map[string]*T{}}
}

// With runs f on key's value, under the lock.
func (s *Shared[T]) With(key string, f func(*T)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.m[key]
	if v == nil {
		v = s.create()
		s.m[key] = v
	}
	f(v)
}
