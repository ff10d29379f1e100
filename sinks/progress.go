package sinks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/revenue-stream/hourly/model"
)

// checkResumePoints refuses points with no partition or run, or two points
// for one partition.
func checkResumePoints(points []model.Checkpoint) error {
	seen := make(map[string]bool, len(points))
	for _, p := range points {
		switch {
		case p.Partition == "":
			return fmt.Errorf("seal resume point %s after %q: empty partition", p.Run, p.File)
		case p.Run == "":
			return fmt.Errorf("seal resume point of partition %s: empty run", p.Partition)
		case seen[p.Partition]:
			return fmt.Errorf("seal resume points: partition %s twice", p.Partition)
		}
		seen[p.Partition] = true
	}
	return nil
}

// changedResumePoints returns the points that differ from the stored ones,
// so that sealed_at says when a point was first sealed.
func changedResumePoints(current, points []model.Checkpoint) []model.Checkpoint {
	have := make(map[string]model.Checkpoint, len(current))
	for _, c := range current {
		have[c.Partition] = c
	}
	var out []model.Checkpoint
	for _, p := range points {
		if c, ok := have[p.Partition]; !ok || c != p {
			out = append(out, p)
		}
	}
	return out
}

// sortCheckpoints orders checkpoints by partition, then file.
func sortCheckpoints(cs []model.Checkpoint) {
	slices.SortStableFunc(cs, func(a, b model.Checkpoint) int {
		if c := strings.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		return strings.Compare(a.File, b.File)
	})
}
