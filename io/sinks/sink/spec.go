// Package sink is the contract between the pipeline and its sinks: what a
// --sink value names (Spec), which stored rows a restarted run continues
// from (SeedBound, Published), and the registry through which a backend
// says how its rows are read back (Register).
//
// It imports no backend. The backends live in io/sinks, which registers
// every scheme in its init; a binary that imports io/sinks (cmd/launch,
// cmd/reconcile, through app/...) has them all, in its workers too, since
// on prism and in a PROCESS environment the worker is the same binary. So
// transforms and pipeline, which only carry a Spec to the worker, link
// neither BigQuery, SQLite nor a runner (testing/deps checks it).
package sink

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Sink schemes accepted by ParseSpec.
const (
	SchemeSQLite   = "sqlite"
	SchemeJSONL    = "jsonl"
	SchemeConsole  = "console"
	SchemeBigQuery = "bigquery"
)

// Forms lists the forms ParseSpec accepts, for messages.
const Forms = "sqlite:PATH, jsonl:DIR, console or bigquery:PROJECT.DATASET"

// Spec is a parsed --sink value.
type Spec struct {
	Scheme string // sqlite|jsonl|console|bigquery
	// Path is the SQLite file or the JSONL directory.
	Path string
	// Project and Dataset are set for bigquery.
	Project, Dataset string
}

// String renders the spec in the form ParseSpec accepts.
func (s Spec) String() string {
	switch s.Scheme {
	case SchemeConsole:
		return SchemeConsole
	case SchemeBigQuery:
		return SchemeBigQuery + ":" + s.Project + "." + s.Dataset
	}
	return s.Scheme + ":" + s.Path
}

var (
	// Google Cloud project ids: 6-30 characters, lowercase letters, digits and
	// hyphens, starting with a letter and not ending with a hyphen; legacy
	// domain-scoped ids carry a "domain.tld:" prefix.
	projectRE = regexp.MustCompile(`^(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	// BigQuery dataset names: letters, digits and underscores, up to 1024
	// (the length is checked apart: Go's regexp caps repeats at 1000).
	datasetRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

// CheckPath refuses, before any work, a sink whose place cannot hold it: a
// SQLite file whose folder does not exist, or a path that is a folder. It
// reads the local filesystem only (the other schemes pass: opening them is
// the check). The error does not name the sink: the caller names its flag.
func (s Spec) CheckPath() error {
	if s.Scheme != SchemeSQLite {
		return nil
	}
	if fi, err := os.Stat(s.Path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a folder: want a SQLite file", s.Path)
	}
	dir := filepath.Dir(s.Path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("folder %s does not exist", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	}
	return nil
}

// ParseSpec parses a --sink value: "sqlite:PATH", "jsonl:DIR", "console" or
// "bigquery:PROJECT.DATASET". Errors are one line and name the bad part, since
// SPEC §6 wants a bad sink string refused before any work starts.
func ParseSpec(s string) (Spec, error) {
	if s == "" {
		return Spec{}, fmt.Errorf("sink is empty: want %s", Forms)
	}
	scheme, rest, hasArg := strings.Cut(s, ":")
	switch scheme {
	case SchemeSQLite:
		if rest == "" {
			return Spec{}, fmt.Errorf("sink %q: empty path: want sqlite:PATH", s)
		}
		// The driver reads everything after '?' as connection parameters.
		if strings.ContainsRune(rest, '?') {
			return Spec{}, fmt.Errorf("sink %q: the path may not contain '?'", s)
		}
		if err := localOnly(s, rest); err != nil {
			return Spec{}, err
		}
		return Spec{Scheme: SchemeSQLite, Path: rest}, nil
	case SchemeJSONL:
		if rest == "" {
			return Spec{}, fmt.Errorf("sink %q: empty directory: want jsonl:DIR", s)
		}
		if err := localOnly(s, rest); err != nil {
			return Spec{}, err
		}
		return Spec{Scheme: SchemeJSONL, Path: rest}, nil
	case SchemeConsole:
		if hasArg {
			return Spec{}, fmt.Errorf("sink %q: console takes no argument: want console", s)
		}
		return Spec{Scheme: SchemeConsole}, nil
	case SchemeBigQuery:
		// A dataset name has no '.', a domain-scoped project may: split on
		// the last one.
		i := strings.LastIndexByte(rest, '.')
		if rest == "" || i < 0 {
			return Spec{}, fmt.Errorf("sink %q: want bigquery:PROJECT.DATASET", s)
		}
		project, dataset := rest[:i], rest[i+1:]
		if !projectRE.MatchString(project) {
			return Spec{}, fmt.Errorf("sink %q: bad project id %q: want 6-30 lowercase letters, digits or hyphens, starting with a letter", s, project)
		}
		if len(dataset) > 1024 || !datasetRE.MatchString(dataset) {
			return Spec{}, fmt.Errorf("sink %q: bad dataset %q: want 1-1024 letters, digits or underscores", s, dataset)
		}
		return Spec{Scheme: SchemeBigQuery, Project: project, Dataset: dataset}, nil
	}
	return Spec{}, fmt.Errorf("sink %q: unknown scheme %q: want %s", s, scheme, Forms)
}

// localOnly refuses a SQLite or JSONL path with a URL scheme (gs://, s3://,
// file://, ...): those sinks write with local file calls, which would make a
// folder named "gs:" rather than reach the bucket. BigQuery is the
// production sink.
func localOnly(spec, path string) error {
	if scheme, _, ok := strings.Cut(path, "://"); ok {
		return fmt.Errorf("sink %q: %s writes local files only, not %s:// paths: use a local path, or --sink=bigquery:PROJECT.DATASET in production", spec, spec[:strings.IndexByte(spec, ':')], scheme)
	}
	return nil
}
