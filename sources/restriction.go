package sources

import (
	"fmt"
	"slices"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/sources/internal/sdfread"
	"github.com/revenue-stream/hourly/watermark"
)

func init() {
	coders.Register(encodeRestriction, decodeRestriction)
}

// maxRemembered is how many read file names a restriction keeps to recognise
// a file appearing out of lexical order; a checkpoint stays a few kilobytes.
const maxRemembered = 256

// restriction is one partition's whole reading state: where the reader is,
// which files it has read, and the partition's watermark state.
type restriction struct {
	// File is the file being read ("" between files), Offset and Line its
	// rawlog.Mark: the complete lines consumed, blank ones included.
	File   string
	Offset int64
	Line   int

	// Files sorting below Floor count as read; FloorFiles is how many were
	// listed below it (-1: not counted yet), so a file appearing there is
	// noticed. Read holds the other names read, sorted, copied on write.
	Floor      string
	FloorFiles int
	Read       []string

	watermark.State

	// Closed: no work left (a replay's end, a checkpoint's primary).
	Closed bool
}

// newRestriction is a partition that has read nothing, at processing time now.
func newRestriction(now int64) restriction { return restriction{State: watermark.NewState(now)} }

// Clone, Closing and IsClosed make restriction sdfread.Checkpointable. Clone
// keeps a split's halves from sharing Read.
func (r restriction) Clone() restriction {
	r.Read = slices.Clone(r.Read)
	return r
}

func (r restriction) Closing() restriction {
	r = r.Clone()
	r.Closed = true
	return r
}

func (r restriction) IsClosed() bool { return r.Closed }

// isRead reports whether a file was read completely.
func (r *restriction) isRead(name string) bool {
	if name < r.Floor {
		return true
	}
	_, found := slices.BinarySearch(r.Read, name)
	return found
}

// markRead records a file as read completely.
func (r *restriction) markRead(name string) {
	if name < r.Floor {
		return
	}
	i, found := slices.BinarySearch(r.Read, name)
	if !found {
		// Copy on write: the tracker keeps the last claim's slice uncopied.
		r.Read = slices.Insert(slices.Clip(r.Read), i, name)
	}
}

// lastRead is the largest name read, or "".
func (r *restriction) lastRead() string {
	if len(r.Read) == 0 {
		return ""
	}
	return r.Read[len(r.Read)-1]
}

// prune keeps Read within maxRemembered by raising the floor, never past a
// listed (sorted) file not read yet.
func (r *restriction) prune(listed []string) {
	if len(r.Read) <= maxRemembered {
		return
	}
	floor := r.Read[len(r.Read)-maxRemembered/2]
	for _, name := range listed {
		if name >= floor {
			break
		}
		if !r.isRead(name) && name != r.File {
			floor = name // the smallest unread listed name
			break
		}
	}
	if floor <= r.Floor {
		return
	}
	i, _ := slices.BinarySearch(r.Read, floor)
	r.Read = slices.Clone(r.Read[i:])
	r.Floor = floor
	r.FloorFiles, _ = slices.BinarySearch(listed, floor)
}

func (r restriction) String() string {
	return fmt.Sprintf("{file=%q offset=%d line=%d floor=%q read=%d %v closed=%v}",
		r.File, r.Offset, r.Line, r.Floor, len(r.Read), r.State, r.Closed)
}

// restrictionVersion 2: the watermark state holds the backlog hold.
const restrictionVersion = 2

func encodeRestriction(r restriction) []byte {
	return sdfread.EncodeRestriction(restrictionVersion, 64+len(r.File)+len(r.Floor)+16*len(r.Read), func(w *coders.Writer) {
		w.String(r.File)
		w.Varint(r.Offset)
		w.Varint(int64(r.Line))
		w.String(r.Floor)
		w.Varint(int64(r.FloorFiles))
		w.Uvarint(uint64(len(r.Read)))
		for _, name := range r.Read {
			w.String(name)
		}
		r.State.Encode(w)
		w.Bool(r.Closed)
	})
}

func decodeRestriction(b []byte) (restriction, error) {
	return sdfread.DecodeRestriction(b, restrictionVersion, "source restriction", func(rd *coders.Reader) (r restriction) {
		r.File, r.Offset, r.Line, r.Floor, r.FloorFiles = rd.String(), rd.Varint(), int(rd.Varint()), rd.String(), int(rd.Varint())
		n := rd.Uvarint()
		if rd.Err == nil && n > uint64(len(rd.B)) { // each name takes at least a byte
			rd.Err = fmt.Errorf("%d file names in %d bytes", n, len(rd.B))
		}
		for i := uint64(0); i < n && rd.Err == nil; i++ {
			r.Read = append(r.Read, rd.String())
		}
		r.State, r.Closed = watermark.DecodeState(rd), rd.Bool()
		return r
	})
}
