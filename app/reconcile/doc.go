// Package reconcile is the daily batch check of the streaming result (SPEC §6): it recomputes
// revenue and event count per window and dims from the raw log in a Beam batch pipeline, compares
// them with the sink's rows as the pipeline's last step, writes one reconcile_diffs row per
// differing window, and with --apply writes each material correction as a higher FINAL revision
// (writer reconcile:<run_id>). A second run finds nothing. cmd/reconcile calls [Main].
//
//	partitions ─ Reshuffle ─ scan (rawlog.Scan, rawlog.Stamper, event.Parse) ─┐
//	stream evidence (conflict_events, too_late_events) ───────────────────────┴─ CoGroupByKey(shard)
//	  ─ choose one payload per event_id ─ CombinePerKey(window, dims) ─ totals ─┬─ + stats ─ textio ─ driver
//	Impulse ─ compare with the sink's rows (totals: a side input) ─ Comparison ─┘
//
// Reading, stamping, sharding, windows and keys are the stream's functions, called, not copied, so
// verdicts match the stream's. The result reaches the driver as one JSON value (the stats, totals
// and Comparison) in a textio file under --work-dir (a collector works only in prism's loopback
// mode). Which payload counts is [Choice]'s, what is compared [Compare]'s, what --apply writes
// [Corrections]'. The choice holds a shard's ids in memory (about 200 bytes each): raise --shards
// to keep a shard near a million ids.
package reconcile
