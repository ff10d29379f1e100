package sources

import (
	"fmt"
	"slices"

	"github.com/revenue-stream/hourly/coders"
	"github.com/revenue-stream/hourly/io/internal/sdfread"
	"github.com/revenue-stream/hourly/watermark"
)

func init() {
	sdfread.RegisterRestrictionCoder(encodeRestriction, decodeRestriction)
}

// maxRemembered is how many read file names a restriction keeps to recognise
// a file that appears out of lexical order (see the package doc). Enough for
// any producer whose disorder is a few files; small enough that a
// checkpoint, taken every poll, stays a few kilobytes.
const maxRemembered = 256

// restriction is one partition's whole reading state: where the reader is,
// which files it has read, and the partition's watermark-policy state. A
// reader that resumes from it continues exactly, with the same line numbers
// and the same WatermarkBefore for every record.
type restriction struct {
	// File is the file being read ("" between files), Offset and Line its
	// rawlog.Mark: the complete lines consumed, blank ones included.
	File   string
	Offset int64
	Line   int

	// Files sorting below Floor count as read; FloorFiles is how many were
	// listed when the floor was set (-1: not counted yet), so that a file
	// appearing below it is noticed. Read holds, sorted, the other names
	// read completely (at most maxRemembered); it is copied on write, never
	// changed in place.
	Floor      string
	FloorFiles int
	Read       []string

	// State is the partition's watermark state (see watermark.State).
	watermark.State

	// Closed marks a restriction with no work left: a replay that reached
	// the end, or the primary of a checkpoint.
	Closed bool
}

// newRestriction is a partition that has read nothing, started at
// processing time now (idleness is measured from there).
func newRestriction(now int64) restriction {
	return restriction{FloorFiles: 0, State: watermark.NewState(now)}
}

// clone copies r so that a split's halves never share the Read slice.
// (Claims need no copy, since Read is copied on write.)
func (r restriction) clone() restriction {
	r.Read = slices.Clone(r.Read)
	return r
}

// Clone, Closing and IsClosed make restriction sdfread.Checkpointable.
func (r restriction) Clone() restriction { return r.clone() }

func (r restriction) Closing() restriction {
	c := r.clone()
	c.Closed = true
	return c
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
		// Copy on write: the tracker keeps the slice of the last claim
		// without copying it (a claim per record must stay cheap), so a
		// slice once claimed is never modified in place.
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

// prune keeps Read within maxRemembered by raising the floor. listed is the
// partition's current listing (sorted): the floor never passes a listed file
// that is not read yet, and FloorFiles counts the listed names below it.
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
		r.File = rd.String()
		r.Offset = rd.Varint()
		r.Line = int(rd.Varint())
		r.Floor = rd.String()
		r.FloorFiles = int(rd.Varint())
		n := rd.Uvarint()
		if rd.Err == nil && n > uint64(len(rd.B)) { // each name takes at least a byte
			rd.Err = fmt.Errorf("%d file names in %d bytes", n, len(rd.B))
		}
		for i := uint64(0); i < n && rd.Err == nil; i++ {
			r.Read = append(r.Read, rd.String())
		}
		r.State = watermark.DecodeState(rd)
		r.Closed = rd.Bool()
		return r
	})
}
