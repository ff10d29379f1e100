package jsonl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/testing/sinktest"
)

// A line holding a value no writer stores, a result_state (the codec's check) or an amount (the
// column's), is one unreadable row, as in SQLite: before, the first such line failed the read.
func TestJSONLUnreadableRowsNamed(t *testing.T) {
	for _, c := range []struct{ column, from, to, want string }{
		{"result_state", `"FINAL"`, `"DONE"`, `revision 2: unknown result_state "DONE"`},
		{"revenue", `"40.000000"`, `"4x.0"`, `bad amount "4x.0"`},
	} {
		t.Run(c.column, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			w, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			r, ok, err := sink.OpenReader(context.Background(), sink.Spec{Scheme: sink.SchemeJSONL, Path: dir})
			if err != nil || !ok {
				t.Fatalf("OpenReader = %v, %v", ok, err)
			}
			t.Cleanup(func() { r.Close() })
			sinktest.UnreadableRow(t, w, r, c.column, c.want, func(start string) {
				path := filepath.Join(dir, ChangelogFile)
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.SplitAfter(string(data), "\n")
				for i, l := range lines {
					if strings.HasPrefix(l, `{"window_start":"`+start+`"`) {
						lines[i] = strings.Replace(l, c.from, c.to, 1)
					}
				}
				edited := strings.Join(lines, "")
				if strings.Count(edited, c.to) != 1 {
					t.Fatalf("the edit did not take:\n%s", edited)
				}
				if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
