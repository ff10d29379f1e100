package launch

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/revenue-stream/hourly/model"
	"github.com/revenue-stream/hourly/pipeline"
	"github.com/revenue-stream/hourly/sinks/sink"
	"github.com/revenue-stream/hourly/sources/rawlog"
)

// resumeHorizon is the event time before which a restart need not re-read anything (SPEC §8). A
// skipped record must change nothing: its window is FINAL (it starts before openStart, the earliest
// window not FINAL), and dedup has forgotten its id (FINAL rows prove the watermark passed
// finalEnd + lateness; an id goes once the watermark is retention past it; the bound covers the
// lag of the last files' watermark). ok is false without a FINAL row: then everything is read.
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

// chooseResume picks, per partition, the last checkpoint (sorted by partition, then file) whose
// largest valid event time lies below horizon, if past its sealed point: they only move forward.
func chooseResume(checkpoints []model.Checkpoint, horizon int64, sealed []model.Checkpoint) []model.Checkpoint {
	at := map[string]string{}
	for _, c := range sealed {
		at[c.Partition] = c.File
	}
	var out []model.Checkpoint
	for i, c := range checkpoints {
		if c.MaxValid >= horizon {
			continue
		}
		if f, ok := at[c.Partition]; ok && c.File <= f {
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

// seedBound is the earliest window whose sink row the revision step needs (sink.Published). A
// partition resumed after c restarts its watermark at c.MaxValid - bound, so a window ending by
// min(MaxValid) - bound - lateness is closed (SPEC §4); windows not FINAL are kept. A partition
// read from its first file, or resumed without a watermark, needs every row (the zero bound).
func seedBound(resume []model.Checkpoint, partitions []string, openStart int64, hasOpen bool, po pipeline.Options) sink.SeedBound {
	if len(partitions) == 0 {
		return sink.SeedBound{}
	}
	low, resumed := int64(0), map[string]bool{}
	for i, c := range resume {
		if c.MaxValid == model.NoWatermark {
			return sink.SeedBound{}
		}
		if i == 0 || c.MaxValid < low {
			low = c.MaxValid
		}
		resumed[c.Partition] = true
	}
	for _, p := range partitions {
		if !resumed[p] {
			return sink.SeedBound{}
		}
	}
	from := po.Triggers.WindowStart(low - po.Watermark.OutOfOrderBound.Milliseconds() - po.Triggers.AllowedLateness.Milliseconds())
	if hasOpen {
		from = min(from, po.Triggers.WindowStart(openStart))
	}
	return sink.SeedBound{Bounded: true, StartFrom: from}
}

// resumePoints reads where a folder source resumes each partition (nil: everything), from the
// points earlier runs sealed, and the windows whose rows the revision step needs (seedBound).
func resumePoints(ctx context.Context, spec sink.Spec, dir string, po pipeline.Options) ([]model.Checkpoint, sink.SeedBound, error) {
	none := sink.SeedBound{}
	store, ok, err := sink.OpenProgress(ctx, spec)
	if err != nil || !ok {
		return nil, none, err
	}
	defer store.Close()
	sealed, err := store.ResumePoints(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("sink %s: %w", spec, err)
	}
	if len(sealed) == 0 {
		return nil, none, nil
	}
	parts, err := rawlog.ListPartitions(dir)
	if err != nil {
		return nil, none, fmt.Errorf("--source=%s: %w", dir, err)
	}
	listed := map[string]bool{}
	for _, p := range parts {
		listed[p] = true
	}
	var resume []model.Checkpoint
	for _, c := range sealed {
		if listed[c.Partition] { // a partition gone from the folder is not read
			resume = append(resume, c)
			slog.Info("restart: resuming partition after its sealed checkpoint", "partition", c.Partition, "after", c.File,
				"line", c.Line, "max_valid_event_time", fmtEventTime(c.MaxValid), "sealed_by", c.Run)
		}
	}
	if len(resume) == 0 {
		return nil, none, nil
	}
	openStart, hasOpen, err := store.EarliestOpenWindow(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("sink %s: %w", spec, err)
	}
	bound := seedBound(resume, parts, openStart, hasOpen, po)
	slog.Info("restart: re-reading only what dedup and the open windows need",
		"partitions_resumed", len(resume), "partitions", len(parts), "sink_rows_loaded_for", bound.String())
	return resume, bound, nil
}

func fmtEventTime(ms int64) string {
	if ms == model.NoWatermark {
		return "none"
	}
	return model.FormatTime(ms)
}
