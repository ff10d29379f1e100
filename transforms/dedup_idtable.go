package transforms

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
)

// idKey is what dedup remembers of an event_id: 16 bytes whatever its length,
// the first 128 bits of its SHA-256 with the low bit forced to 1 (a zero key is
// an empty slot). A cryptographic hash keeps clients from crafting collisions;
// at the design peak one is 1.0e-20 likely per retention period, and reconcile
// would report it.
type idKey struct{ lo, hi uint64 }

func hashID(id string) idKey {
	s := sha256.Sum256([]byte(id))
	return idKey{lo: binary.LittleEndian.Uint64(s[:8]) | 1, hi: binary.LittleEndian.Uint64(s[8:16])}
}

// idTable is an open-addressing hash set of remembered ids with their
// fingerprint and window, in parallel arrays (28 bytes a slot, no pointers),
// 53 % to 80 % full. The key is uniform, so its high bits pick the slot.
type idTable struct {
	keys []idKey
	fps  []uint64
	wins []uint32 // window index: window start / window length, mod 2^32
	n    int
}

const (
	idSlotBytes = 16 + 8 + 4
	idMaxLoad   = 0.8
)

func newIDTable(n int) idTable {
	c := int(float64(n)/idMaxLoad) + 16
	return idTable{keys: make([]idKey, c), fps: make([]uint64, c), wins: make([]uint32, c)}
}

func (t *idTable) slot(k idKey) int {
	hi, _ := bits.Mul64(k.hi, uint64(len(t.keys)))
	return int(hi)
}

// find returns k's slot, or the empty slot where it would go.
func (t *idTable) find(k idKey) (int, bool) {
	for i := t.slot(k); ; {
		switch t.keys[i] {
		case k:
			return i, true
		case idKey{}:
			return i, false
		}
		if i++; i == len(t.keys) {
			i = 0
		}
	}
}

// get returns the fingerprint remembered for k.
func (t *idTable) get(k idKey) (uint64, bool) {
	if t.n == 0 {
		return 0, false
	}
	i, ok := t.find(k)
	return t.fps[i], ok
}

// put remembers k (later puts of the same key win).
func (t *idTable) put(k idKey, fp uint64, win uint32) {
	if len(t.keys) == 0 || float64(t.n+1) > idMaxLoad*float64(len(t.keys)) {
		t.grow(t.n + t.n/2 + 16)
	}
	i, ok := t.find(k)
	if !ok {
		t.n++
		t.keys[i] = k
	}
	t.fps[i], t.wins[i] = fp, win
}

func (t *idTable) grow(n int) {
	old := *t
	*t = newIDTable(n)
	old.each(t.put)
}

// filter keeps the entries whose window keep accepts, returning how many it
// dropped. It deletes in place, keeping the capacity the next window refills;
// only a table left mostly empty is rebuilt smaller.
func (t *idTable) filter(keep func(win uint32) bool) int {
	if t.n == 0 {
		return 0
	}
	before := t.n
	c := len(t.keys)
	// Start after an empty slot, so no probe run crosses the scan's start.
	start := 0
	for t.keys[start] != (idKey{}) {
		start++ // a table is at most 80 % full: an empty slot exists
	}
	for step := 1; step <= c; {
		i := (start + step) % c
		if k := t.keys[i]; k == (idKey{}) || keep(t.wins[i]) {
			step++
			continue
		}
		t.remove(i) // slot i now holds a shifted entry, or is empty: look again
	}
	if t.n < len(t.keys)/16 && len(t.keys) > 1<<12 {
		t.grow(t.n + t.n/2 + 16)
	}
	return before - t.n
}

// remove deletes slot i's entry and shifts back the entries of its probe run
// that would no longer be found past the hole (Knuth's algorithm R).
func (t *idTable) remove(i int) {
	c := len(t.keys)
	t.n--
	for j := i; ; {
		t.keys[i] = idKey{}
		for {
			j++
			if j == c {
				j = 0
			}
			if t.keys[j] == (idKey{}) {
				return
			}
			// The entry at j stays unless its home slot h lies cyclically
			// in (i, j]: then the hole at i would cut its probe run.
			h := t.slot(t.keys[j])
			if (i <= j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
				break
			}
		}
		t.keys[i], t.fps[i], t.wins[i] = t.keys[j], t.fps[j], t.wins[j]
		i = j
	}
}

// each calls fn for every entry.
func (t *idTable) each(fn func(k idKey, fp uint64, win uint32)) {
	for i, k := range t.keys {
		if k != (idKey{}) {
			fn(k, t.fps[i], t.wins[i])
		}
	}
}

// bytes is the table's memory.
func (t *idTable) bytes() int64 { return int64(len(t.keys)) * idSlotBytes }
