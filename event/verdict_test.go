package event

import "testing"

func TestSeenJudge(t *testing.T) {
	type copy struct {
		fp     uint64
		closed bool
		want   Verdict
	}
	for _, tc := range []struct {
		name   string
		copies []copy
	}{
		{"first copy counts, identical copy is a duplicate, other content a conflict",
			[]copy{{1, false, Counted}, {1, false, Duplicate}, {2, false, Conflict}, {1, false, Duplicate}}},
		{"a closed window is too late even for a copy",
			[]copy{{1, false, Counted}, {1, true, TooLate}, {2, true, TooLate}}},
		{"a too-late first copy leaves nothing: the next open one counts",
			[]copy{{1, true, TooLate}, {2, false, Counted}, {1, false, Conflict}}},
		{"conflicts compare with the counted copy, not the previous one",
			[]copy{{1, false, Counted}, {2, false, Conflict}, {2, false, Conflict}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Seen
			for i, c := range tc.copies {
				if got := s.Judge(c.fp, c.closed); got != c.want {
					t.Errorf("copy %d (fp %d, closed %v): %v, want %v", i+1, c.fp, c.closed, got, c.want)
				}
			}
		})
	}
}
