// Package reconcile is the daily batch check of the streaming result (SPEC
// §6): it recomputes revenue and event count per window and dims from the raw
// log in a Beam batch pipeline, compares them with the sink's rows as the
// pipeline's last step, writes one reconcile_diffs row per differing window,
// and with --apply writes each material correction as a higher FINAL
// revision (writer reconcile:<run_id>). A second run finds nothing.
// cmd/reconcile is a thin shell around [Parse], [Options.Validate] and [Run].
//
// # The pipeline
//
//	partitions ─ Reshuffle ─ scan (rawlog.Scan, rawlog.Stamper, event.Parse) ─┐
//	stream evidence (conflict_events, too_late_events) ───────────────────────┴─ CoGroupByKey(shard)
//	  ─ choose one payload per event_id ─ CombinePerKey(window, dims) ─ totals ─┬─ textio ─ driver
//	Impulse ─ compare with the sink's rows (totals: a side input) ─ Comparison ─┘
//
// Records are stamped with the Stamper the file source uses, so --max-age
// verdicts match the stream's; shards, windows and keys are the stream's
// functions, called, not copied. [CompareWithSink] reads the sink as late as
// possible, so a window finalised meanwhile compares as FINAL, and counts its
// figures as Beam metrics in [Namespace]. The result reaches the driver as a
// textio file under --work-dir (a collector would work only in prism's
// loopback mode); on Flink or Dataflow --work-dir and --source must be
// reachable from the workers.
//
// # Which payload counts
//
// SPEC §6: the one the stream counted (conflict_events.first_fingerprint),
// else the lowest source_position; copies in too_late_events were not counted
// and rank last (see [Choice]). Conflicting copies are reported, never
// summed. Records the stream quarantined as future_event_time stay out: that
// verdict depends on the stream's read time, which no recomputation replays.
//
// # What is compared
//
// Keys in --from/--to or --date, else every key of a window in the raw log
// (a shorter-lived raw log proves nothing about older rows). A key is closed
// when its row is FINAL, or it has no row and ends by the latest FINAL
// window_end; a differing closed key is missing_window, too_late (short by
// exactly the too-late copies) or unexplained. Any count difference or a
// revenue difference above --tolerance is material. Open keys are reported
// only: the stream still owns them.
//
// # --apply
//
// Each material diff becomes a FINAL row at revision + 1, in one batch. A
// window with sink rows but no raw event is held back (a trimmed log looks
// the same). Diffs are written before and after the corrections, so a crash
// in between leaves "not applied" beside the changelog rows. A refused
// correction (a concurrent writer) fails the run with exit code 2.
//
// # Settings and scale
//
// The sink's run_config must agree on window, dimensions and
// allowed_lateness, else the keys would not line up. The stream's evidence
// travels in the graph (beam.CreateList); the choice holds a shard's ids in
// memory (about 200 bytes each): raise --shards to keep a shard near a
// million ids.
package reconcile
