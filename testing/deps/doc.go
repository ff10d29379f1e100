// Package deps guards the line between the product and its tests: no
// package outside testing/ (every binary under cmd/ in particular) may
// depend on a package under testing/. Test infrastructure, the oracle and
// fault injection stay out of what ships; a shipped binary that imported
// them would carry the test reference or a hook that kills the process.
//
// It also guards the line between the job graph and the backends (issue
// 29): transforms and pipeline link no sink backend (BigQuery, SQLite), no
// GCS client and no embedded runner; the binaries register those.
//
// The checks are its tests (go test ./testing/deps), which asks the go tool for
// the dependency graph, so it sees exactly what the build sees.
package deps
