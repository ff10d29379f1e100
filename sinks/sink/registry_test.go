package sink

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/revenue-stream/hourly/model"
)

// fakeReader holds rows; with ranged set it also filters by window
// where it reads, recording that it did.
type fakeReader struct {
	Reader // the methods Published does not call
	rows   []model.Row
	ranged bool
	from   *int64
	closed bool
}

func (f *fakeReader) Changelog(context.Context, Query) ([]ChangelogEntry, error) {
	return entries(f.rows), nil
}

func entries(rows []model.Row) []ChangelogEntry {
	var out []ChangelogEntry
	for _, r := range rows {
		out = append(out, ChangelogEntry{Row: r})
	}
	return out
}

func (f *fakeReader) Close() error { f.closed = true; return nil }

type rangedReader struct{ *fakeReader }

func (r rangedReader) Changelog(_ context.Context, q Query) ([]ChangelogEntry, error) {
	from := *q.From
	r.from = &from
	var out []model.Row
	for _, row := range r.rows {
		if row.WindowStart >= from {
			out = append(out, row)
		}
	}
	return entries(out), nil
}

// registerReader registers a backend reading through open for scheme for the
// test's duration.
func registerReader(t *testing.T, scheme string, open func(context.Context, Spec) (Reader, bool, error)) {
	t.Helper()
	Register(scheme, Backend{Open: func(context.Context, Spec) (Sink, error) { return nil, nil }, Existing: existing(open)})
	t.Cleanup(func() {
		mu.Lock()
		delete(backends, scheme)
		mu.Unlock()
	})
}

// existing is open as a Backend's Existing.
func existing(open func(context.Context, Spec) (Reader, bool, error)) func(context.Context, Spec, bool) (Sink, bool, error) {
	return func(ctx context.Context, spec Spec, _ bool) (Sink, bool, error) {
		r, ok, err := open(ctx, spec)
		if r == nil {
			return nil, ok, err
		}
		return r, ok, err
	}
}

// TestPublishedUnregistered: with no backend imported (this package's
// tests import none), a known scheme fails with an error naming it and the
// package that registers it, an unknown scheme as unknown; the zero Spec
// reads nothing and needs no backend.
func TestPublishedUnregistered(t *testing.T) {
	ctx := context.Background()
	_, err := Published(ctx, Spec{Scheme: SchemeSQLite, Path: "revenue.db"}, SeedBound{})
	if err == nil || !strings.Contains(err.Error(), `"sqlite"`) || !strings.Contains(err.Error(), Backends) {
		t.Errorf("Published(sqlite, nothing registered) error = %v, want one naming the scheme and %s", err, Backends)
	}
	if _, err := Lookup(SchemeBigQuery); err == nil || !strings.Contains(err.Error(), `"bigquery"`) {
		t.Errorf("Lookup(bigquery) = %v, want an error naming it", err)
	}
	if _, err := Published(ctx, Spec{Scheme: "postgres"}, SeedBound{}); err == nil || !strings.Contains(err.Error(), `unknown sink scheme "postgres"`) {
		t.Errorf("Published(postgres) error = %v, want unknown sink scheme", err)
	}
	if rows, err := Published(ctx, Spec{}, SeedBound{}); rows != nil || err != nil {
		t.Errorf("Published(zero Spec) = %v, %v; want nothing", rows, err)
	}
}

// TestPublished: rows come through the registered Opener, filtered by the
// bound (where they are read when the reader can, else here), FINAL rows
// as closed markers; a sink with nothing to read back gives no rows.
func TestPublished(t *testing.T) {
	ctx := context.Background()
	old := model.Row{WindowStart: 0, WindowEnd: 10, Dims: "{}", RevenueMicros: 5, EventCount: 1, Revision: 3, State: model.Final}
	final := model.Row{WindowStart: 10, WindowEnd: 20, Dims: "{}", RevenueMicros: 7, EventCount: 2, Revision: 2, State: model.Final}
	open := model.Row{WindowStart: 20, WindowEnd: 30, Dims: "{}", RevenueMicros: 9, EventCount: 3, Revision: 1, State: model.OnTime}
	marker := func(r model.Row) model.Row {
		return model.Row{WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, Dims: r.Dims, Revision: r.Revision, State: model.Final}
	}
	bound := SeedBound{Bounded: true, StartFrom: 10}

	plain := &fakeReader{rows: []model.Row{old, final, open}}
	ranged := &fakeReader{rows: []model.Row{old, final, open}}
	registerReader(t, "plain", func(context.Context, Spec) (Reader, bool, error) { return plain, true, nil })
	registerReader(t, "ranged", func(context.Context, Spec) (Reader, bool, error) { return rangedReader{ranged}, true, nil })
	registerReader(t, "empty", func(context.Context, Spec) (Reader, bool, error) { return nil, false, nil })

	for _, tc := range []struct {
		scheme string
		bound  SeedBound
		want   []model.Row
	}{
		{"plain", SeedBound{}, []model.Row{marker(old), marker(final), open}},
		{"plain", bound, []model.Row{marker(final), open}},
		{"ranged", bound, []model.Row{marker(final), open}},
		{"empty", bound, nil},
	} {
		got, err := Published(ctx, Spec{Scheme: tc.scheme}, tc.bound)
		if err != nil {
			t.Fatalf("Published(%s, %v): %v", tc.scheme, tc.bound, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Published(%s, %v) =\n%v\nwant\n%v", tc.scheme, tc.bound, got, tc.want)
		}
	}
	if !plain.closed || !ranged.closed {
		t.Error("Published left a reader open")
	}
	if ranged.from == nil || *ranged.from != 10 {
		t.Error("Published did not let the reader filter by the bound")
	}
	if !bound.Needs(10) || bound.Needs(9) || !(SeedBound{}).Needs(-1) {
		t.Error("SeedBound.Needs: the zero bound needs every window, a bound none before it")
	}
}

// TestRegisterTwice: a second backend for one scheme is refused.
func TestRegisterTwice(t *testing.T) {
	open := func(context.Context, Spec) (Reader, bool, error) { return nil, false, nil }
	registerReader(t, "twice", open)
	defer func() {
		if recover() == nil {
			t.Error("Register(twice) a second time did not panic")
		}
	}()
	Register("twice", Backend{Open: func(context.Context, Spec) (Sink, error) { return nil, nil }, Existing: existing(open)})
}
