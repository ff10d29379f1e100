package transforms

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIDTableFilterInPlace checks the in-place expiry against a map, over
// rounds of inserts and filters as a shard sees them (one window in, the
// oldest out), on small tables so that probe runs wrap around the end.
func TestIDTableFilterInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, perWindow := range []int{3, 40, 1000} {
		var tb idTable
		want := map[idKey]uint64{}
		wins := map[idKey]uint32{}
		next := 0
		for w := uint32(0); w < 30; w++ {
			for range perWindow + rng.IntN(perWindow/2+1) {
				k := hashID(fmt.Sprint(next))
				tb.put(k, uint64(next), w)
				want[k], wins[k] = uint64(next), w
				next++
			}
			if w < 5 {
				continue
			}
			capBefore := len(tb.keys)
			oldest := w - 5
			dropped := tb.filter(func(win uint32) bool { return win > oldest })
			n := 0
			for k, win := range wins {
				if win <= oldest {
					delete(want, k)
					delete(wins, k)
					n++
				}
			}
			if dropped != n || tb.n != len(want) {
				t.Fatalf("%d a window, window %d: filter dropped %d (want %d), left %d (want %d)", perWindow, w, dropped, n, tb.n, len(want))
			}
			if len(tb.keys) != capBefore {
				t.Fatalf("%d a window, window %d: filter changed the capacity %d -> %d", perWindow, w, capBefore, len(tb.keys))
			}
			live := 0
			tb.each(func(idKey, uint64, uint32) { live++ })
			if live != tb.n {
				t.Fatalf("each saw %d entries, n is %d", live, tb.n)
			}
			for k, fp := range want {
				if got, ok := tb.get(k); !ok || got != fp {
					t.Fatalf("%d a window, window %d: a kept id is lost (ok %v, fp %d want %d)", perWindow, w, ok, got, fp)
				}
			}
			for i := next - 3*perWindow; i < next; i++ {
				if i < 0 {
					continue
				}
				k := hashID(fmt.Sprint(i))
				if _, kept := want[k]; !kept {
					if _, ok := tb.get(k); ok {
						t.Fatalf("an expired id is still remembered")
					}
				}
			}
		}
	}
}

// TestIDTableSteadyStateDoesNotAllocate is the churn issue #26 measured:
// expiring one window and adding the next must neither rebuild nor grow the
// table. Negative control: a table rebuilt at the survivors' size (the old
// filter) allocates on the next window's inserts.
func TestIDTableSteadyStateDoesNotAllocate(t *testing.T) {
	const perWindow = 20_000
	var tb idTable
	id := 0
	add := func(w uint32) {
		for range perWindow {
			tb.put(hashID(fmt.Sprint(id)), uint64(id), w)
			id++
		}
	}
	for w := uint32(0); w < 6; w++ {
		add(w)
	}
	keys := make([]idKey, 0, perWindow)
	for i := range perWindow {
		keys = append(keys, hashID(fmt.Sprint(id+i)))
	}
	w := uint32(6)
	window := func() {
		oldest := w - 6
		tb.filter(func(win uint32) bool { return win > oldest })
		for i, k := range keys {
			tb.put(k, uint64(i), w)
		}
		for i := range keys {
			keys[i].hi += 0x9e3779b97f4a7c15 // next window's ids
		}
		w++
	}
	// AllocsPerRun counts every goroutine's mallocs, and earlier tests of the
	// package leave clients behind (gRPC, the emulator's): the least of a few
	// measurements is the table's. A table that grows allocates in every one.
	allocs := testing.AllocsPerRun(5, window)
	for i := 0; i < 4 && allocs != 0; i++ {
		allocs = min(allocs, testing.AllocsPerRun(5, window))
	}
	if allocs != 0 {
		t.Fatalf("a window of expiry and inserts allocated %.0f times, want 0", allocs)
	}

	rebuilt := newIDTable(tb.n) // what the old filter left
	tb.each(func(k idKey, fp uint64, win uint32) { rebuilt.put(k, fp, win) })
	capBefore := len(rebuilt.keys)
	for i, k := range keys {
		rebuilt.put(k, uint64(i), w)
	}
	if len(rebuilt.keys) == capBefore {
		t.Fatal("negative control: a table at the survivors' size did not grow on the next window")
	}
}
