// Package sink is the contract between the pipeline and its sinks: the
// --sink value (Spec), the types a backend implements and callers hold
// (Batch, Sink, Reader, ProgressStore, ...), the write verbs (Write,
// WriteProgress), the stored rows a restarted revision step continues from
// (Published) and the registry of backends (Register, Lookup, Open,
// OpenReader, OpenProgress). It imports no backend: each backend package
// registers itself in init and binaries import sinks/all, so transforms and
// pipeline link neither BigQuery, SQLite nor a runner (testing/deps).
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

// Default is the sink cmd/launch writes and cmd/reconcile reads when --sink is not given.
var Default = Spec{Scheme: SchemeSQLite, Path: "revenue.db"}

// forms lists the forms ParseSpec accepts, for messages.
const forms = "sqlite:PATH, jsonl:DIR, console or bigquery:PROJECT.DATASET"

// Spec is a parsed --sink value: Path is the SQLite file or the JSONL
// directory, Project and Dataset are bigquery's.
type Spec struct {
	Scheme           string // sqlite|jsonl|console|bigquery
	Path             string
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
	// Google Cloud project ids, with the legacy "domain.tld:" prefix.
	projectRE = regexp.MustCompile(`^(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	// BigQuery dataset names; the length (1024) is checked apart.
	datasetRE = regexp.MustCompile(`^[A-Za-z0-9_]+$`)
)

// CheckPath refuses a SQLite path that is a folder or whose folder does not
// exist (other schemes pass). The caller names its flag in the error.
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

// ParseSpec parses a --sink value (forms). Errors are one line naming the bad
// part: SPEC §6 refuses a bad sink before any work.
func ParseSpec(s string) (Spec, error) {
	if s == "" {
		return Spec{}, fmt.Errorf("sink is empty: want %s", forms)
	}
	scheme, rest, hasArg := strings.Cut(s, ":")
	switch scheme {
	case SchemeSQLite, SchemeJSONL:
		if rest == "" {
			want := map[string]string{SchemeSQLite: "path: want sqlite:PATH", SchemeJSONL: "directory: want jsonl:DIR"}[scheme]
			return Spec{}, fmt.Errorf("sink %q: empty %s", s, want)
		}
		// The driver reads everything after '?' as connection parameters.
		if scheme == SchemeSQLite && strings.ContainsRune(rest, '?') {
			return Spec{}, fmt.Errorf("sink %q: the path may not contain '?'", s)
		}
		if err := localOnly(s, rest); err != nil {
			return Spec{}, err
		}
		return Spec{Scheme: scheme, Path: rest}, nil
	case SchemeConsole:
		if hasArg {
			return Spec{}, fmt.Errorf("sink %q: console takes no argument: want console", s)
		}
		return Spec{Scheme: SchemeConsole}, nil
	case SchemeBigQuery:
		// A domain-scoped project may hold a '.', a dataset not.
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
	return Spec{}, fmt.Errorf("sink %q: unknown scheme %q: want %s", s, scheme, forms)
}

// localOnly refuses a URL path (gs://, s3://, ...): local file calls would
// make a folder named "gs:" rather than reach the bucket.
func localOnly(spec, path string) error {
	if scheme, _, ok := strings.Cut(path, "://"); ok {
		return fmt.Errorf("sink %q: %s writes local files only, not %s:// paths: use a local path, or --sink=bigquery:PROJECT.DATASET in production", spec, spec[:strings.IndexByte(spec, ':')], scheme)
	}
	return nil
}
