package sinks

import (
	"errors"
	"fmt"
	"strings"
)

// RowError is a stored row that cannot be read: table, key, column, why.
type RowError struct {
	Table  string
	Column string
	// WindowStart and Dims are the row's key as stored, if it has one.
	WindowStart, Dims string
	Err               error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("%s row window_start=%s dims=%s: column %s: %v", e.Table, e.WindowStart, e.Dims, e.Column, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// UnreadableRows is the error of a read that skipped rows it could not read,
// returned with the others; reconcile counts each as unexplained.
type UnreadableRows []*RowError

func (u UnreadableRows) Error() string {
	if len(u) == 1 {
		return u[0].Error()
	}
	return fmt.Sprintf("%s (and %d more unreadable rows)", u[0].Error(), len(u)-1)
}

// Unreadable returns the rows err reports as unreadable, and whether err is
// nothing else (true for nil).
func Unreadable(err error) (UnreadableRows, bool) {
	if err == nil {
		return nil, true
	}
	var u UnreadableRows
	if errors.As(err, &u) {
		return u, true
	}
	return nil, false
}

// rowKey fills e's table and key, where unset, from a scanned row of t.
func (e *RowError) rowKey(table string, t *Table, texts []string) *RowError {
	if e.Table == "" {
		e.Table = table
	}
	for i, c := range t.Columns {
		switch {
		case c.Name == "window_start" && e.WindowStart == "":
			e.WindowStart = strings.TrimSpace(texts[i])
		case c.Name == "dims" && e.Dims == "":
			e.Dims = texts[i]
		}
	}
	return e
}
