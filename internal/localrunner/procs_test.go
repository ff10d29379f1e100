package localrunner

import "testing"

func TestProcsFor(t *testing.T) {
	for _, c := range []struct {
		env   string
		procs int
		want  int
		set   bool
	}{
		{"", 2, 8, true},
		{"", 1, 4, true},
		{"2", 2, 2, false}, // the user's GOMAXPROCS stands
		{"16", 16, 16, false},
	} {
		if got, set := procsFor(c.env, c.procs); got != c.want || set != c.set {
			t.Errorf("procsFor(%q, %d) = %d, %v; want %d, %v", c.env, c.procs, got, set, c.want, c.set)
		}
	}
}
