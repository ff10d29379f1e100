package pubsub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/revenue-stream/hourly/internal/files"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// listed counts the names the memfs store's listings return: memfs lists
// here as a bucket does (files.ListAfter through a Store), each name one a
// list page carries.
var listed atomic.Int64

func init() {
	files.RegisterStore("memfs", files.Store{
		Ranges: func(context.Context, string, string) (func(model.LineRef) (io.ReadCloser, error), error) {
			return nil, errors.New("unused")
		},
		NotExist: func(error) bool { return false },
		ListFrom: func(ctx context.Context, bucket, prefix, start string, limit int) ([]string, error) {
			all, err := memfs.New(ctx).List(ctx, "memfs://"+bucket+"/"+prefix+"*")
			var names []string
			for _, n := range all {
				if n = strings.TrimPrefix(strings.TrimPrefix(n, "memfs://"), bucket+"/"+prefix); n > strings.TrimPrefix(start, prefix) && len(names) < limit {
					names = append(names, n)
				}
			}
			listed.Add(int64(len(names)))
			return names, err
		},
	})
}

// A catch-up over an archive of N objects lists O(N) names in all: each
// call lists one page after its position, not the whole archive after it
// (O(N²) over the thousands of calls of a day's catch-up). A call whose
// page came back full ends after re-emitting it, without pulling: the
// message pulled comes after every archived record.
func TestCatchUpListsOnePagePerCall(t *testing.T) {
	for _, c := range []struct{ perCall, want int }{
		// 20 calls of 5 records: the first lists objects 0-9, call c (1-18)
		// the 10 from object 5c-1 (half emitted), call 19 the last 6 and call 20
		// object 99; listing everything after the position lists 1,070.
		{5, 10 + 18*10 + 6 + 1},
		{0, 10 + 10 + 5}, // the default: two full pages, then the rest and the pull
	} {
		t.Run(fmt.Sprint(c.perCall), func(t *testing.T) {
			e := newEmulator(t, 10*time.Second)
			id := e.publish(purchase("P", "2026-11-04T10:15:00Z", "1"))[0]
			p := newPlainReader(t, e, fmt.Sprintf("memfs://pages-%d-%d/archive", c.perCall, time.Now().UnixNano()))
			n := map[int]int{5: 100, 0: 25}[c.perCall]
			var want []string
			for i := range n {
				m := fmt.Sprint("m", i)
				line := []byte(purchase(m, "2026-11-04T10:15:00Z", "1"))
				if err := p.st.write(context.Background(), makeObjectName("2026-11-04T10", int64(i+1), "t"), [][]byte{line}, []rawlog.SidecarEntry{{ID: m}}); err != nil {
					t.Fatal(err)
				}
				want = append(want, rawlog.IDPosition(m))
			}
			if c.perCall > 0 {
				p.tweak = func(r *reader) { r.o.MaxPerCall = c.perCall }
			}
			p.st.page = 10
			listed.Store(0)
			p.drain(t)
			if got := positions(p.out); !slices.Equal(got, append(want, rawlog.IDPosition(id))) {
				t.Errorf("emitted %q, want the archive in order, then the pulled message", got)
			}
			if got := listed.Load(); got != int64(c.want) {
				t.Errorf("the catch-up of %d objects listed %d names, want %d", n, got, c.want)
			}
		})
	}
}
