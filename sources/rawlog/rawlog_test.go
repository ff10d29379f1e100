package rawlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/watermark"
)

func TestPosition(t *testing.T) {
	for _, tc := range []struct {
		part, file string
		line       int
		want       string
	}{
		{"p0", "000001.jsonl", 1, "p0/000001.jsonl:1"},
		{"p12", "a.jsonl", 1234, "p12/a.jsonl:1234"},
		{RootPartition, "000001.jsonl", 7, "000001.jsonl:7"},
	} {
		got := Position(tc.part, tc.file, tc.line)
		if got != tc.want {
			t.Errorf("Position(%q,%q,%d) = %q, want %q", tc.part, tc.file, tc.line, got, tc.want)
		}
		p, f, l, ok := ParsePosition(got)
		if !ok || p != tc.part || f != tc.file || l != tc.line {
			t.Errorf("ParsePosition(%q) = %q %q %d %v", got, p, f, l, ok)
		}
	}
	for _, bad := range []string{"pubsub:123", "pubsub:abc", "p0/f", "p0/f:0", "p0/f:x", ":3", "/f:3", ""} {
		if _, _, _, ok := ParsePosition(bad); ok {
			t.Errorf("ParsePosition(%q) accepted", bad)
		}
	}
}

func TestComparePositions(t *testing.T) {
	ordered := []string{
		"000001.jsonl:2", // root partition "." sorts first
		"p0/000001.jsonl:9",
		"p0/000001.jsonl:10", // numerically after :9, unlike the strings
		"p0/000002.jsonl:1",
		"p1/000001.jsonl:1",
		"pubsub:1",
		"pubsub:2",
	}
	shuffled := []string{ordered[4], ordered[6], ordered[2], ordered[0], ordered[5], ordered[3], ordered[1]}
	slices.SortFunc(shuffled, ComparePositions)
	if !slices.Equal(shuffled, ordered) {
		t.Fatalf("sorted = %q\nwant     %q", shuffled, ordered)
	}
}

func TestIgnored(t *testing.T) {
	for name, want := range map[string]bool{
		"000001.jsonl": false, "data": false, "p0": false,
		".000001.jsonl.tmp": true, "000001.jsonl.tmp": true, ".hidden": true,
		"_SUCCESS": true, "_temporary": true, "x.jsonl~": true,
	} {
		if got := Ignored(name); got != want {
			t.Errorf("Ignored(%q) = %v, want %v", name, got, want)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestListPartitionsAndFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p1", "000002.jsonl"), "{}\n")
	writeFile(t, filepath.Join(dir, "p1", "000001.jsonl"), "{}\n")
	writeFile(t, filepath.Join(dir, "p1", ".000003.jsonl.tmp"), "{}\n")
	writeFile(t, filepath.Join(dir, "p1", "_SUCCESS"), "")
	writeFile(t, filepath.Join(dir, "p1", "nested", "x.jsonl"), "{}\n") // deeper folders are not read
	writeFile(t, filepath.Join(dir, "p0", "a.jsonl"), "{}\n")
	writeFile(t, filepath.Join(dir, ".staging", "a.jsonl"), "{}\n")
	writeFile(t, filepath.Join(dir, "root.jsonl"), "{}\n")

	parts, err := ListPartitions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".", "p0", "p1"}; !slices.Equal(parts, want) {
		t.Errorf("partitions = %q, want %q", parts, want)
	}
	files, err := ListFiles(dir, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"000001.jsonl", "000002.jsonl"}; !slices.Equal(files, want) {
		t.Errorf("files = %q, want %q", files, want)
	}
	root, err := ListFiles(dir, RootPartition)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"root.jsonl"}; !slices.Equal(root, want) {
		t.Errorf("root files = %q, want %q", root, want)
	}
	if _, err := ListPartitions(filepath.Join(dir, "missing")); err == nil {
		t.Error("ListPartitions of a missing folder: no error")
	}
}

type got struct {
	No        int
	Text      string
	Oversized bool
}

func readAll(t *testing.T, r *Reader) []got {
	t.Helper()
	var out []got
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got{l.No, string(l.Bytes), l.Oversized})
	}
}

func TestReaderLines(t *testing.T) {
	in := "a\n\n  \t\nb\r\n\r\nc\n"
	r := NewReader(strings.NewReader(in), 100)
	want := []got{{1, "a", false}, {4, "b", false}, {6, "c", false}}
	if g := readAll(t, r); !slices.Equal(g, want) {
		t.Fatalf("lines = %+v, want %+v", g, want)
	}
	if m := r.Mark(); m != (Mark{Offset: int64(len(in)), Line: 6}) {
		t.Errorf("mark = %+v", m)
	}
}

func TestReaderOversized(t *testing.T) {
	const max = 10
	exact := strings.Repeat("x", max)
	over := strings.Repeat("y", max+1)
	crlfExact := exact + "\r" // the "\r" does not count towards the limit
	in := exact + "\n" + over + "\n" + crlfExact + "\n" + strings.Repeat("z", 5000) + "\nok\n"
	r := NewReader(strings.NewReader(in), max)
	g := readAll(t, r)
	want := []got{
		{1, exact, false},
		{2, over, true},
		{3, exact, false},
		{4, strings.Repeat("z", PrefixLimit), true},
		{5, "ok", false},
	}
	if !slices.Equal(g, want) {
		t.Fatalf("lines = %+v\nwant %+v", g, want)
	}
}

func TestReaderHugeLineIsNotLoaded(t *testing.T) {
	huge := bytes.Repeat([]byte("h"), 3*DefaultMaxLine)
	in := append(append(huge, '\n'), "next\n"...)
	r := NewReader(bytes.NewReader(in), 0)
	g := readAll(t, r)
	if len(g) != 2 || !g[0].Oversized || len(g[0].Text) != PrefixLimit || g[1].Text != "next" {
		t.Fatalf("got %d lines, first oversized=%v len=%d", len(g), g[0].Oversized, len(g[0].Text))
	}
	if c := cap(r.buf); c > 2*(DefaultMaxLine+2) {
		t.Errorf("reader buffer grew to %d bytes for a %d-byte line", c, len(huge))
	}
}

func TestReaderUnterminatedLastLine(t *testing.T) {
	var src bytes.Buffer
	src.WriteString("a\nb\npart")
	r := NewReader(&src, 100)
	if g := readAll(t, r); !slices.Equal(g, []got{{1, "a", false}, {2, "b", false}}) {
		t.Fatalf("lines = %+v", g)
	}
	if m := r.Mark(); m != (Mark{Offset: 4, Line: 2}) || r.Pending() != 4 {
		t.Fatalf("mark = %+v pending = %d", r.Mark(), r.Pending())
	}
	// The producer finishes the line: the same reader picks it up whole.
	src.WriteString("ial\nd\n")
	if g := readAll(t, r); !slices.Equal(g, []got{{3, "partial", false}, {4, "d", false}}) {
		t.Fatalf("after growth: lines = %+v", g)
	}

	// A bounded reader takes the unterminated last line as a line; a CR
	// before the end is stripped as before a newline, and a blank or
	// oversized tail follows the rules of any line.
	for _, c := range []struct {
		in   string
		want []got
		mark Mark
	}{
		{"a\nlast\r", []got{{1, "a", false}, {2, "last", false}}, Mark{Offset: 7, Line: 2}},
		{"\x00\xff\xfe garbage", []got{{1, "\x00\xff\xfe garbage", false}}, Mark{Offset: 11, Line: 1}},
		{"a\n  ", []got{{1, "a", false}}, Mark{Offset: 4, Line: 2}},
		{"a\n" + strings.Repeat("x", 150), []got{{1, "a", false}, {2, strings.Repeat("x", 150), true}}, Mark{Offset: 152, Line: 2}},
	} {
		r := NewReader(strings.NewReader(c.in), 100)
		g := readAll(t, r)
		if l, ok := r.Tail(); ok {
			g = append(g, got{l.No, string(l.Bytes), l.Oversized})
		}
		if _, ok := r.Tail(); ok || !slices.Equal(g, c.want) || r.Mark() != c.mark || r.Pending() != 0 {
			t.Errorf("%q: lines %+v mark %+v, want %+v mark %+v", c.in, g, r.Mark(), c.want, c.mark)
		}
	}

	// A follower restarting from the mark gets the same numbering.
	full := "a\nb\npartial\nd\n"
	r2 := NewReaderAt(strings.NewReader(full[4:]), 100, Mark{Offset: 4, Line: 2})
	if g := readAll(t, r2); !slices.Equal(g, []got{{3, "partial", false}, {4, "d", false}}) {
		t.Fatalf("resumed: lines = %+v", g)
	}
	if m := r2.Mark(); m.Offset != int64(len(full)) || m.Line != 4 {
		t.Errorf("resumed mark = %+v", m)
	}
}

func TestScan(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p0", "000001.jsonl"), "l1\n\nl3\n")
	writeFile(t, filepath.Join(dir, "p0", "000002.jsonl"), "m1\ntorn")
	var pos []string
	info, err := Scan(dir, "p0", 0, 42, func(rec model.Record) error {
		if rec.Partition != "p0" || rec.ReadAt != 42 || rec.WatermarkBefore != model.NoWatermark {
			t.Errorf("record %+v", rec)
		}
		pos = append(pos, rec.Position+"="+string(rec.Line))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The last line has no newline: it is still a line (SPEC §3).
	want := []string{"p0/000001.jsonl:1=l1", "p0/000001.jsonl:3=l3", "p0/000002.jsonl:1=m1", "p0/000002.jsonl:2=torn"}
	if !slices.Equal(pos, want) {
		t.Errorf("positions = %q, want %q", pos, want)
	}
	if info.Files != 2 || info.Lines != 4 || info.Blank != 1 ||
		!slices.Equal(info.Unterminated, []string{"p0/000002.jsonl:2"}) {
		t.Errorf("info = %+v", info)
	}
}

func TestStamper(t *testing.T) {
	cfg := event.DefaultConfig()
	s := NewStamper(watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Minute}, cfg, 0)
	carrier := NewStamper(watermark.Policy{OutOfOrderBound: 10 * time.Minute, IdleTimeout: time.Minute}, cfg, 0)
	now := time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC).UnixMilli()
	ms := func(v string) int64 {
		tm, err := time.Parse(time.RFC3339, v)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	line := func(id, ts string) []byte {
		return []byte(`{"event_id":"` + id + `","event_time":"` + ts + `","user_id":"u","amount":"1"}`)
	}
	steps := []struct {
		line    []byte
		before  int64
		invalid bool
	}{
		{line("a", "2026-11-04T10:20:00Z"), model.NoWatermark, false},
		{[]byte(`{"broken`), ms("2026-11-04T10:10:00Z"), true},
		{line("f", "2027-01-01T00:00:00Z"), ms("2026-11-04T10:10:00Z"), true}, // future: must not advance
		{line("b", "2026-11-04T10:05:00Z"), ms("2026-11-04T10:10:00Z"), false},
		{line("c", "2026-11-04T10:30:00Z"), ms("2026-11-04T10:10:00Z"), false},
		{line("d", "2026-11-04T10:00:00Z"), ms("2026-11-04T10:20:00Z"), false},
	}
	for i, st := range steps {
		rec := model.Record{Partition: "p0", Position: Position("p0", "f", i+1), Line: st.line, ReadAt: now}
		carried := rec
		ev, q := s.Stamp(&rec)
		// A source's record carries the same verdict (StampRecord), so
		// validation need not parse it again.
		carrier.StampRecord(&carried)
		switch {
		case carried.WatermarkBefore != rec.WatermarkBefore:
			t.Errorf("step %d: StampRecord's WatermarkBefore %d, Stamp's %d", i, carried.WatermarkBefore, rec.WatermarkBefore)
		case q == nil && (carried.Valid == nil || carried.Rejected != nil || carried.Valid.EventID != ev.EventID || carried.Valid.WatermarkBefore != st.before):
			t.Errorf("step %d: carried %+v / %+v, want the event %+v", i, carried.Valid, carried.Rejected, ev)
		case q != nil && (carried.Valid != nil || carried.Rejected == nil || carried.Rejected.Reason != q.Reason):
			t.Errorf("step %d: carried %+v / %+v, want the rejection %+v", i, carried.Valid, carried.Rejected, q)
		}
		if rec.WatermarkBefore != st.before {
			t.Errorf("step %d: WatermarkBefore = %d, want %d", i, rec.WatermarkBefore, st.before)
		}
		if (q != nil) != st.invalid {
			t.Errorf("step %d: quarantined = %v, want %v (%+v)", i, q != nil, st.invalid, q)
		}
	}
	if s.Watermark() != ms("2026-11-04T10:20:00Z") {
		t.Errorf("final watermark = %s", model.FormatTime(s.Watermark()))
	}
}
