// Package sinktest opens sinks for tests in other packages: the product
// opens them by spec (sinks.Open), tests often want the concrete type.
package sinktest

import (
	"context"

	"github.com/revenue-stream/hourly/sinks"
	"github.com/revenue-stream/hourly/sinks/sink"
)

// OpenSQLite opens (creating if needed) the SQLite sink at path, as
// --sink=sqlite:path does.
func OpenSQLite(path string) (*sinks.SQLite, error) {
	s, err := sinks.Open(context.Background(), sink.Spec{Scheme: sink.SchemeSQLite, Path: path})
	if err != nil {
		return nil, err
	}
	return s.(*sinks.SQLite), nil
}
