package sinks

import (
	"errors"
	"fmt"
	"strings"
)

// RowError is a stored row that cannot be read (a revenue that is not a
// decimal, an unknown result_state): which table, which key, which column,
// and why.
type RowError struct {
	Table  string
	Column string
	// WindowStart and Dims are the row's key as stored ("" when the table
	// has no such column).
	WindowStart, Dims string
	Err               error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("%s row window_start=%s dims=%s: column %s: %v", e.Table, e.WindowStart, e.Dims, e.Column, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// UnreadableRows is the error of a read that skipped rows it could not
// read; the rows returned with it are the others. A caller that can go on
// without those rows (reconcile counts each as unexplained) takes them
// from here; any other treats it as the read's failure.
type UnreadableRows []*RowError

func (u UnreadableRows) Error() string {
	if len(u) == 1 {
		return u[0].Error()
	}
	return fmt.Sprintf("%s (and %d more unreadable rows)", u[0].Error(), len(u)-1)
}

// Unreadable returns the rows err reports as unreadable, and whether err
// is nothing else (nil counts as no rows and true).
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

// rowKey fills e's table and key from a scanned row of t whose columns'
// text is texts, where e does not name them.
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
