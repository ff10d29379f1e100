// Package slicesx holds the slice helper the standard slices package lacks.
package slicesx

// Map returns f of each element of in, in order.
func Map[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
