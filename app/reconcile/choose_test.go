package reconcile_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/revenue-stream/hourly/app/reconcile"
)

func cp(pos string, fp uint64, amount int64) reconcile.Copy {
	return reconcile.Copy{EventID: "A", Position: pos, Fingerprint: fp, WindowStart: int64(fp) * 3_600_000, Dims: "{}", AmountMicros: amount}
}

func TestChoice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		copies   []reconcile.Copy
		counted  map[string]uint64
		tooLate  []string
		wantPos  string
		wantRule reconcile.Rule
		// tooLateChosen: the stream never counted the chosen content.
		tooLateChosen       bool
		conflicting, dups   int
		fingerprintNotInLog bool
		// dupsLate and conflictingLate: among dups and conflicting, the
		// copies the stream judged too late (its too_late, not its
		// duplicates or conflicts).
		dupsLate, conflictingLate int
	}{
		{name: "one copy", copies: []reconcile.Copy{cp("p0/f:1", 1, 100)},
			wantPos: "p0/f:1", wantRule: reconcile.RuleOnePayload},
		{name: "identical copies: lowest position, duplicates counted",
			copies:  []reconcile.Copy{cp("p1/f:1", 1, 100), cp("p0/f:9", 1, 100), cp("p0/f:10", 1, 100)},
			wantPos: "p0/f:9", wantRule: reconcile.RuleOnePayload, dups: 2},
		{name: "line numbers compare as numbers",
			copies:  []reconcile.Copy{cp("p0/f:10", 1, 100), cp("p0/f:9", 2, 120)},
			wantPos: "p0/f:9", wantRule: reconcile.RuleLowestPosition, conflicting: 1},
		{name: "the stream's first_fingerprint beats a lower position",
			copies:  []reconcile.Copy{cp("p0/f:1", 1, 100), cp("p1/f:1", 2, 120)},
			counted: map[string]uint64{"A": 2}, wantPos: "p1/f:1", wantRule: reconcile.RuleStreamFingerprint, conflicting: 1},
		{name: "order of arrival does not matter",
			copies:  []reconcile.Copy{cp("p1/f:1", 2, 120), cp("p0/f:1", 1, 100)},
			counted: map[string]uint64{"A": 2}, wantPos: "p1/f:1", wantRule: reconcile.RuleStreamFingerprint, conflicting: 1},
		{name: "a too-late first copy is not the counted one",
			copies:  []reconcile.Copy{cp("p0/f:1", 1, 100), cp("p0/f:2", 2, 120)},
			tooLate: []string{"p0/f:1"}, wantPos: "p0/f:2", wantRule: reconcile.RuleCounted, conflicting: 1, conflictingLate: 1},
		{name: "all too late: lowest position, and the stream never counted it",
			copies:  []reconcile.Copy{cp("p0/f:2", 2, 120), cp("p0/f:1", 1, 100)},
			tooLate: []string{"p0/f:1", "p0/f:2"}, wantPos: "p0/f:1", wantRule: reconcile.RuleLowestPosition,
			tooLateChosen: true, conflicting: 1, conflictingLate: 1},
		{name: "a too-late copy of counted content is still counted",
			copies:  []reconcile.Copy{cp("p0/f:1", 1, 100), cp("p0/f:2", 1, 100)},
			tooLate: []string{"p0/f:1"}, wantPos: "p0/f:2", wantRule: reconcile.RuleOnePayload, dups: 1, dupsLate: 1},
		{name: "first_fingerprint not in the log: the lower clauses decide",
			copies:  []reconcile.Copy{cp("p0/f:2", 2, 120), cp("p0/f:1", 1, 100)},
			counted: map[string]uint64{"A": 7}, wantPos: "p0/f:1", wantRule: reconcile.RuleLowestPosition,
			conflicting: 1, fingerprintNotInLog: true},
		{name: "three payloads, counted one in the middle",
			copies:  []reconcile.Copy{cp("p0/f:1", 1, 1), cp("p0/f:2", 2, 2), cp("p0/f:3", 3, 3), cp("p2/f:1", 2, 2)},
			counted: map[string]uint64{"A": 2}, wantPos: "p0/f:2", wantRule: reconcile.RuleStreamFingerprint,
			conflicting: 2, dups: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := reconcile.Evidence{Counted: tc.counted, TooLate: map[string]bool{}}
			for _, p := range tc.tooLate {
				ev.TooLate[p] = true
			}
			// Every order of the copies gives the same choice: a runner
			// delivers them in any order.
			for i := range 6 {
				copies := append([]reconcile.Copy(nil), tc.copies...)
				if i > 0 {
					r := rand.New(rand.NewPCG(uint64(i), 0))
					r.Shuffle(len(copies), func(a, b int) { copies[a], copies[b] = copies[b], copies[a] })
				}
				ch := reconcile.AddCopies(copies, ev)
				got := fmt.Sprintf("%s %v tooLate=%v conflicting=%d (%d late) dups=%d (%d late) missing=%v",
					ch.Best.Position, ch.Rule(), ch.TooLate(), ch.Conflicting(), ch.ConflictingTooLate(), ch.Duplicates(), ch.DuplicatesTooLate(),
					ch.StreamFingerprintMissing())
				want := fmt.Sprintf("%s %v tooLate=%v conflicting=%d (%d late) dups=%d (%d late) missing=%v",
					tc.wantPos, tc.wantRule, tc.tooLateChosen, tc.conflicting, tc.conflictingLate, tc.dups, tc.dupsLate, tc.fingerprintNotInLog)
				if got != want {
					t.Fatalf("order %d: got  %s\nwant %s", i, got, want)
				}
				tot := ch.Totals()
				if tot.Count != 1 || tot.RevenueMicros != ch.Best.AmountMicros || (tot.TooLateCount == 1) != tc.tooLateChosen {
					t.Fatalf("totals %+v for %+v", tot, ch.Best)
				}
			}
		})
	}
}

func TestTotalsAddRefusesOverflow(t *testing.T) {
	big := reconcile.Totals{RevenueMicros: 1<<63 - 1, Count: 1, Future: []int64{7}}
	if _, err := big.Add(reconcile.Totals{RevenueMicros: 1, Count: 1}); err == nil {
		t.Error("adding past int64 micros did not fail")
	}
	got, err := big.Add(reconcile.Totals{RevenueMicros: -5, Count: 2, TooLateRevenueMicros: 3, TooLateCount: 1, Future: []int64{2}})
	want := reconcile.Totals{RevenueMicros: 1<<63 - 6, Count: 3, TooLateRevenueMicros: 3, TooLateCount: 1, Future: []int64{2, 7}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Add = %+v, %v", got, err)
	}
}
