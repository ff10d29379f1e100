//go:build !faults

package faults

// Fire never fires in a production build.
func Fire(string) bool { return false }

// Crash does nothing in a production build.
func Crash(string) {}
