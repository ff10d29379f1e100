// Package reconcile is the daily batch check of the streaming result (SPEC §6): it recomputes
// revenue and event count per window and dims from the raw log in a Beam batch pipeline, compares
// them with the sink's rows as the pipeline's last step, writes one reconcile_diffs row per
// differing window, and with --apply writes each material correction as a higher FINAL revision
// (writer reconcile:<run_id>). A second run finds nothing. cmd/reconcile is a thin shell around
// [Parse], [Options.Validate] and [Run].
//
//	partitions ─ Reshuffle ─ scan (rawlog.Scan, rawlog.Stamper, event.Parse) ─┐
//	stream evidence (conflict_events, too_late_events) ───────────────────────┴─ CoGroupByKey(shard)
//	  ─ choose one payload per event_id ─ CombinePerKey(window, dims) ─ totals ─┬─ textio ─ driver
//	Impulse ─ compare with the sink's rows (totals: a side input) ─ Comparison ─┘
//
// Reading, stamping, sharding, windows and keys are the stream's functions, called, not copied, so
// verdicts match the stream's. [CompareWithSink] reads the sink as late as possible, so a window
// finalised meanwhile compares as FINAL. The result reaches the driver as a textio file under
// --work-dir (a collector would work only in prism's loopback mode); on Flink or Dataflow
// --work-dir and --source must be reachable from the workers.
//
// Which payload counts is [Choice]'s. Records the stream quarantined as future_event_time stay out:
// that verdict depends on the stream's read time, which no recomputation replays. What is compared
// is [Compare]'s: keys in the range, or of the raw log's windows (a shorter-lived raw log proves
// nothing about older rows); only closed keys are classified and material, since the stream still
// owns open ones. What --apply writes is [Corrections]'.
//
// The sink's run_config must agree on window, dimensions and allowed_lateness, else the keys would
// not line up. The stream's evidence travels in the graph (beam.CreateList); the choice holds a
// shard's ids in memory (about 200 bytes each): raise --shards to keep a shard near a million ids.
package reconcile
