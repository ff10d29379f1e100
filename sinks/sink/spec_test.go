package sink

import (
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	good := []struct {
		in   string
		want Spec
	}{
		{"sqlite:revenue.db", Spec{Scheme: "sqlite", Path: "revenue.db"}},
		{"sqlite:/var/lib/rev/revenue.db", Spec{Scheme: "sqlite", Path: "/var/lib/rev/revenue.db"}},
		{"sqlite:C:rev.db", Spec{Scheme: "sqlite", Path: "C:rev.db"}},
		{"jsonl:out", Spec{Scheme: "jsonl", Path: "out"}},
		{"jsonl:./out/dir", Spec{Scheme: "jsonl", Path: "./out/dir"}},
		{"console", Spec{Scheme: "console"}},
		{"bigquery:my-project.revenue", Spec{Scheme: "bigquery", Project: "my-project", Dataset: "revenue"}},
		{"bigquery:acme-prod-42.Hourly_Revenue_1", Spec{Scheme: "bigquery", Project: "acme-prod-42", Dataset: "Hourly_Revenue_1"}},
		{"bigquery:example.com:my-project.ds", Spec{Scheme: "bigquery", Project: "example.com:my-project", Dataset: "ds"}},
	}
	for _, tc := range good {
		got, err := ParseSpec(tc.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseSpec(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("ParseSpec(%q).String() = %q", tc.in, got.String())
		}
	}

	bad := []struct{ in, wantErr string }{
		{"", `sink is empty: want sqlite:PATH, jsonl:DIR, console or bigquery:PROJECT.DATASET`},
		{"sqlite", `sink "sqlite": empty path: want sqlite:PATH`},
		{"sqlite:", `sink "sqlite:": empty path: want sqlite:PATH`},
		{"sqlite:rev.db?mode=ro", `sink "sqlite:rev.db?mode=ro": the path may not contain '?'`},
		{"jsonl:", `sink "jsonl:": empty directory: want jsonl:DIR`},
		{"jsonl:gs://bucket/out", `sink "jsonl:gs://bucket/out": jsonl writes local files only, not gs:// paths: use a local path, or --sink=bigquery:PROJECT.DATASET in production`},
		{"jsonl:s3://bucket/out", `not s3:// paths`},
		{"jsonl:file:///tmp/out", `not file:// paths`},
		{"sqlite:gs://bucket/revenue.db", `sink "sqlite:gs://bucket/revenue.db": sqlite writes local files only, not gs:// paths`},
		{"console:x", `sink "console:x": console takes no argument: want console`},
		{"console:", `sink "console:": console takes no argument: want console`},
		{"postgres:db", `sink "postgres:db": unknown scheme "postgres": want sqlite:PATH, jsonl:DIR, console or bigquery:PROJECT.DATASET`},
		{"SQLITE:x", `sink "SQLITE:x": unknown scheme "SQLITE"`},
		{"revenue.db", `sink "revenue.db": unknown scheme "revenue.db"`},
		{"bigquery:", `sink "bigquery:": want bigquery:PROJECT.DATASET`},
		{"bigquery:my-project", `sink "bigquery:my-project": want bigquery:PROJECT.DATASET`},
		{"bigquery:My-Project.ds", `bad project id "My-Project"`},
		{"bigquery:abc.ds", `bad project id "abc"`},
		{"bigquery:1project.ds", `bad project id "1project"`},
		{"bigquery:my-project-.ds", `bad project id "my-project-"`},
		{"bigquery:my-project.", `bad dataset ""`},
		{"bigquery:my-project.rev-enue", `bad dataset "rev-enue"`},
		{"bigquery:my-project." + strings.Repeat("d", 1025), `bad dataset`},
	}
	for _, tc := range bad {
		_, err := ParseSpec(tc.in)
		if err == nil {
			t.Errorf("ParseSpec(%q) accepted", tc.in)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("ParseSpec(%q) error = %q, want it to contain %q", tc.in, err, tc.wantErr)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseSpec(%q) error spans lines: %q", tc.in, err)
		}
	}
}
