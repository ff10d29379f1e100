// Package all registers every sink backend (sqlite, jsonl, console,
// bigquery) for sink.Open and the write verbs. The packages that open a sink
// a --sink flag names import it for its side effect (app/launch,
// app/reconcile, testing/bench), so each binary, and each prism worker
// running in it, knows every scheme; transforms and pipeline import none.
package all

import (
	_ "github.com/revenue-stream/hourly/sinks/bigquery"
	_ "github.com/revenue-stream/hourly/sinks/console"
	_ "github.com/revenue-stream/hourly/sinks/jsonl"
	_ "github.com/revenue-stream/hourly/sinks/sqlite"
)
