package pubsub

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/revenue-stream/hourly/event"
	"github.com/revenue-stream/hourly/io/rawlog"
	"github.com/revenue-stream/hourly/model"
)

// A payload with CR or LF is archived with TABs instead, and every verdict
// of SPEC §3 (and the fingerprint) stays what it was for the payload.
func TestArchiveLineKeepsVerdicts(t *testing.T) {
	cfg := event.DefaultConfig()
	readAt := time.Date(2026, 11, 5, 0, 0, 0, 0, time.UTC).UnixMilli()
	for _, payload := range []string{
		`{"event_id":"a","event_time":"2026-11-04T10:15:00Z","user_id":"u","amount":"1"}`,
		"{\n  \"event_id\": \"a\",\r\n  \"event_time\": \"2026-11-04T10:15:00Z\",\n  \"user_id\": \"u\",\n  \"amount\": \"1\"\n}",
		"{\"event_id\":\"a\nb\",\"event_time\":\"2026-11-04T10:15:00Z\",\"user_id\":\"u\",\"amount\":\"1\"}",   // raw LF in a string
		"{\"event_id\":\"a\\\nb\",\"event_time\":\"2026-11-04T10:15:00Z\",\"user_id\":\"u\",\"amount\":\"1\"}", // backslash + LF
		"[1,\n2]",
		"\n\r\n",
		`{"event_id":"a","event_time":"2026-11-04T10:15:00Z","user_id":"u","amount":"1"}` + "\r",
	} {
		line := archiveLine([]byte(payload))
		if bytes.ContainsAny(line, "\r\n") || len(line) != len(payload) {
			t.Errorf("archiveLine(%q) = %q: still has CR/LF or changed length", payload, line)
		}
		if !strings.ContainsAny(payload, "\r\n") && string(line) != payload {
			t.Errorf("archiveLine(%q) = %q: a one-line payload must stay byte-identical", payload, line)
		}
		if rawlog.Blank([]byte(payload)) != rawlog.Blank(line) {
			t.Errorf("archiveLine(%q): blankness changed", payload)
		}
		orig, q1 := event.Parse(model.Record{Line: []byte(payload), ReadAt: readAt, WatermarkBefore: model.NoWatermark}, cfg)
		arch, q2 := event.Parse(model.Record{Line: line, ReadAt: readAt, WatermarkBefore: model.NoWatermark}, cfg)
		switch {
		case (q1 == nil) != (q2 == nil):
			t.Errorf("archiveLine(%q): verdict changed: %v vs %v", payload, q1, q2)
		case q1 != nil && q1.Reason != q2.Reason:
			t.Errorf("archiveLine(%q): reason %s became %s", payload, q1.Reason, q2.Reason)
		case q1 == nil && (orig.Fingerprint != arch.Fingerprint || orig.EventID != arch.EventID):
			t.Errorf("archiveLine(%q): event changed", payload)
		}
	}
}

func readArchive(t *testing.T, dir string) (files []string, lines, ids []string) {
	t.Helper()
	files, err := rawlog.ListFiles(dir, Partition)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, Partition, f))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
		side, err := os.ReadFile(filepath.Join(dir, Partition, idsName(f)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strings.Split(strings.TrimSuffix(string(side), "\n"), "\n")...)
	}
	return files, lines, ids
}

func TestArchiveRotationAndOrder(t *testing.T) {
	dir := t.TempDir()
	h10 := time.Date(2026, 11, 4, 10, 59, 0, 0, time.UTC)
	a := openArchive(dir, 3)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.Append([][]byte{[]byte("l1"), []byte("l2")}, []string{"m1", "m2"}, h10))
	must(a.Append([][]byte{[]byte("l3"), []byte("l4")}, []string{"m3", "m4"}, h10)) // 3 lines per file
	must(a.Append([][]byte{[]byte("l5")}, []string{"m5"}, h10.Add(2*time.Minute)))  // next hour
	must(a.Append([][]byte{[]byte("l6")}, []string{"m6"}, h10.Add(-time.Hour)))     // clock stepped back
	must(a.Seal())
	must(a.Append([][]byte{[]byte("l7")}, []string{"m7"}, h10.Add(2*time.Minute)))
	must(closeArchive(a))

	// Another run (a new writer) continues the sequence in a new file.
	b := openArchive(dir, 3)
	must(b.Append([][]byte{[]byte("l8")}, []string{"m8"}, h10))
	must(closeArchive(b))

	files, lines, ids := readArchive(t, dir)
	wantFiles := []string{
		"2026-11-04T10-000001.jsonl", "2026-11-04T10-000002.jsonl",
		"2026-11-04T11-000003.jsonl", "2026-11-04T11-000004.jsonl", "2026-11-04T11-000005.jsonl",
	}
	if !slices.Equal(files, wantFiles) {
		t.Errorf("files = %q\nwant %q", files, wantFiles)
	}
	if want := []string{"l1", "l2", "l3", "l4", "l5", "l6", "l7", "l8"}; !slices.Equal(lines, want) {
		t.Errorf("lines in lexical file order = %q, want arrival order %q", lines, want)
	}
	if want := []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"}; !slices.Equal(ids, want) {
		t.Errorf("sidecar ids = %q, want %q", ids, want)
	}
	// Raw-log readers (reconcile, the folder source) see the payloads only.
	parts, err := rawlog.ReadPartitions(dir, 0, h10)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || len(parts[Partition]) != 8 || parts[Partition][0].Position != "pubsub/2026-11-04T10-000001.jsonl:1" {
		t.Errorf("rawlog sees %v", parts)
	}
}

// A failed write leaves the file behind; the next append starts a new one.
func TestArchiveErrorStartsNewFile(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 4, 10, 0, 0, 0, time.UTC)
	a := openArchive(dir, 100)
	defer closeArchive(a)
	if err := a.Append([][]byte{[]byte("l1")}, []string{"m1"}, now); err != nil {
		t.Fatal(err)
	}
	a.f.Close() // the disk goes away under the writer
	if err := a.Append([][]byte{[]byte("l2")}, []string{"m2"}, now); err == nil {
		t.Fatal("append to a closed file: no error")
	}
	if err := a.Append([][]byte{[]byte("l3")}, []string{"m3"}, now); err != nil {
		t.Fatal(err)
	}
	files, lines, _ := readArchive(t, dir)
	if len(files) != 2 || !slices.Equal(lines, []string{"l1", "l3"}) {
		t.Errorf("files %q lines %q", files, lines)
	}
}
