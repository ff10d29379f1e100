package launch

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/revenue-stream/hourly/io/rawlog"
	"github.com/revenue-stream/hourly/io/sinks"
	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
)

// resumeHorizon is the event time before which a restarted job need not
// re-read anything (SPEC §8: restart cost grows with the retention, not the
// history). A record it skips must be one that can change nothing:
//
//   - its window is FINAL in the sink: every window with rows that starts
//     before the earliest window not yet FINAL (openStart) is;
//   - its event_id is no longer remembered by dedup: the sink's FINAL rows
//     prove the watermark passed finalEnd + lateness, and an id is forgotten
//     once the watermark is retention past its event time. The extra bound
//     covers the records of the last files before the horizon, whose
//     partition watermark lagged their event times by up to the bound.
//
// A partition's files are skipped up to the last checkpoint whose largest
// valid event time is below the horizon: every record in them has an event
// time no later than that. ok is false when the sink proves nothing (no
// FINAL row): the restart then reads everything.
func resumeHorizon(finalEnd int64, hasFinal bool, openStart int64, hasOpen bool, po pipeline.Options) (int64, bool) {
	if !hasFinal {
		return 0, false
	}
	po = po.WithDefaults()
	h := finalEnd + po.Triggers.AllowedLateness.Milliseconds() -
		po.DedupRetention.Milliseconds() - po.Watermark.OutOfOrderBound.Milliseconds()
	if hasOpen {
		h = min(h, openStart)
	}
	return h, true
}

// chooseResume picks, per partition, the last checkpoint whose largest valid
// event time lies below the horizon (checkpoints sorted by partition, then
// file). Partitions no longer in the folder are left out.
func chooseResume(checkpoints []model.Checkpoint, horizon int64, partitions []string) []model.Checkpoint {
	listed := map[string]bool{}
	for _, p := range partitions {
		listed[p] = true
	}
	var out []model.Checkpoint
	for i, c := range checkpoints {
		if !listed[c.Partition] || c.MaxValid >= horizon {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Partition == c.Partition {
			out[n-1] = checkpoints[i] // a later file of the same partition
			continue
		}
		out = append(out, c)
	}
	return out
}

// resumePoints reads the sink's checkpoints and horizon and returns where a
// folder source resumes each partition (nil: read everything). Only the
// SQLite sink keeps checkpoints. Checkpoints before the chosen ones are
// deleted: no later restart resumes earlier, so the table stays as small as
// what a restart re-reads.
func resumePoints(ctx context.Context, spec sinks.Spec, dir string, po pipeline.Options) ([]model.Checkpoint, error) {
	if spec.Scheme != sinks.SchemeSQLite {
		return nil, nil
	}
	r, ok, err := sinks.OpenReader(ctx, spec)
	if err != nil || !ok {
		return nil, err
	}
	defer r.Close()
	db := r.(*sinks.SQLite)
	finalEnd, hasFinal, err := db.FinalHorizon(ctx)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", spec, err)
	}
	openStart, hasOpen, err := db.EarliestOpenWindow(ctx)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", spec, err)
	}
	horizon, ok := resumeHorizon(finalEnd, hasFinal, openStart, hasOpen, po)
	if !ok {
		return nil, nil
	}
	checkpoints, err := db.Checkpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", spec, err)
	}
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		return nil, fmt.Errorf("--source=%s: %w", dir, err)
	}
	resume := chooseResume(checkpoints, horizon, parts)
	if len(resume) == 0 {
		return nil, nil
	}
	keep := map[string]string{}
	for _, c := range resume {
		keep[c.Partition] = c.File
		slog.Info("restart: resuming partition after its checkpoint", "partition", c.Partition, "after", c.File,
			"line", c.Line, "max_valid_event_time", fmtEventTime(c.MaxValid))
	}
	slog.Info("restart: re-reading only what dedup and the open windows need", "horizon", fmtEventTime(horizon),
		"partitions_resumed", len(resume), "partitions", len(parts))
	if err := db.PruneCheckpoints(ctx, keep); err != nil {
		return nil, fmt.Errorf("sink %s: %w", spec, err)
	}
	return resume, nil
}

func fmtEventTime(ms int64) string {
	if ms == model.NoWatermark {
		return "none"
	}
	return model.FormatTime(ms)
}
