// Package reconcile is the daily batch check of the streaming result (SPEC
// §6): it recomputes revenue and event count per window and dims from the
// raw log in a Beam batch pipeline, compares them with the sink's rows as
// that pipeline's last step, writes one reconcile_diffs row per differing
// window, and with --apply writes each material correction as a strictly
// higher FINAL revision through the same versioned sink (writer
// reconcile:<run_id>). A second run then finds nothing and writes nothing.
// cmd/reconcile is a thin shell around [Parse], [Options.Validate] and [Run].
//
// # The pipeline
//
//	partitions ─ Reshuffle ─ scan (rawlog.Scan, rawlog.Stamper, event.Parse) ─┐
//	stream evidence (conflict_events, too_late_events) ───────────────────────┴─ CoGroupByKey(shard)
//	  ─ choose one payload per event_id ─ CombinePerKey(window, dims) ─ totals ─┬─ textio ─ driver
//	Impulse ─ compare with the sink's rows (totals: a side input) ─ Comparison ─┘
//
// One element per partition: its records are stamped in arrival order, with
// the very Stamper the file source and the oracle use, so --max-age verdicts
// match the stream's. Valid copies are batched per event-id shard
// (transforms.ShardOf, the stream's dedup sharding) and grouped with the
// stream's evidence for that shard; the choice keeps one [Choice] per id,
// never the id's copies. Windows are triggers.Policy.WindowStart and keys
// transforms.WindowKey: the stream's rules, called, not copied.
//
// The last step ([CompareWithSink]) runs once, when every total is
// complete: it reads the sink's current rows and final horizon then — after
// the recomputation, as late as possible, so a window the stream finalised
// meanwhile is compared as FINAL — runs [Compare], and increments a Beam
// counter in [Namespace] by each figure of [Comparison.Metrics]
// (windows_compared, windows_differing, ...), with the distribution
// [MetricWindowDeltaMicros]. They are the job's own metrics, so a runner's
// UI shows them; read back from the pipeline result, they are the
// summary's and the report's metrics ([Outcome.Counters]).
//
// The recomputed totals (one line per window and dims key) and the
// comparison (one line per differing key) come back to the driver through
// a file that textio writes under --work-dir; the driver compares nothing
// itself, and uses that comparison for reconcile_diffs, --apply and the
// report. A process-wide collector would only work where the runner
// executes DoFns in the driver's process (prism's loopback mode), and a
// DoFn writing to SQLite only where workers share the driver's disk;
// Beam's filesystem layer serves a local folder on prism and gs:// on
// Dataflow. On Flink or Dataflow set --work-dir to a location the workers
// and the driver both reach, and give --source as a path the workers can
// read; the comparison step opens --sink on a worker too (a BigQuery
// dataset is reachable from anywhere, a SQLite file only where the workers
// share the driver's disk).
//
// # Which payload counts
//
// SPEC §6: for an id with several payloads, the one the stream counted (its
// first_fingerprint in conflict_events), else the lowest source_position.
// Between the two sits a clause the SPEC implies: a copy in too_late_events
// was not the one the stream counted, so without a conflict row, copies the
// stream did not judge too late come first (see [Choice]). Identical copies
// count once; conflicting copies are reported in [Stats], never summed.
//
// A record the stream quarantined as future_event_time stays out: that
// verdict depends on the processing time of the stream's read, which no
// recomputation can replay. Every other verdict is recomputed with the
// run's start (Options.Now) as the read time.
//
// # What is compared
//
// With --from/--to or --date, every key whose window_start is in the range,
// on either side. By default, every key of a window present in the raw log;
// sink rows of windows the raw log does not have are not checked, because a
// raw log is often kept for less time than the table and its absence proves
// nothing.
//
// A key is closed when the sink's row is FINAL, or when it has no row and
// the window ends by the latest FINAL window_end in the sink (the stream's
// own statement that its watermark passed that window's close). Closed keys
// are "windows checked"; a differing one is classified:
//
//   - missing_window: the sink has no row (typically every event was too
//     late);
//   - too_late: the FINAL row is short by exactly the events whose chosen
//     copy the stream judged too late (too_late_events);
//   - unexplained: anything else.
//
// Any count difference, or a revenue difference above --tolerance, is
// material. Every differing closed key is written to reconcile_diffs; only
// material ones are applied, and they set the exit code: 1 if any is
// unexplained, else 3 while explained ones are not written yet (ExitPending).
//
// Keys not yet closed (a row not yet FINAL, or no row for a window the
// stream has not closed) are open: reported separately in the summary and
// the report, never written to reconcile_diffs, never material, never
// applied. The stream still owns them, and a reconcile revision would
// collide with its next one.
//
// # --apply
//
// Each material diff becomes a FINAL row with the recomputed totals at the
// current revision + 1 (1 for a missing window), written in one batch. The
// sink admits a lower count from a reconcile writer only, and never
// un-finals a row. One material case is held back: a window with sink rows
// but no event at all in the raw log (possible only with an explicit
// range). Emptying it would more likely destroy a right result than correct
// a wrong one — a trimmed raw log or a wrong --source looks exactly like
// that — so it stays a material, unapplied diff for a person to look at.
// The diffs are written first without applied_revision and
// rewritten with it once the corrections are in: a crash in between leaves
// diffs saying "not applied" beside changelog rows naming the run, which a
// rerun (finding nothing) makes plain. If the sink refuses a correction (a
// concurrent writer), the run fails with exit code 2.
//
// # Settings
//
// The validation, watermark and window flags are the stream's, and the
// sink's run_config must agree on window, dimensions and allowed_lateness
// (the launcher's keys and formats): otherwise the run is refused, since
// its window_start keys would not line up. sinks.SQLite.CheckRunConfig is
// used, so a sink without run_config takes this run's settings.
//
// # Scale
//
// The stream's evidence travels in the pipeline graph (beam.CreateList):
// fine for a SQLite deployment; a BigQuery sink should read it inside the
// pipeline instead. The choice holds every distinct id of a shard in memory
// (about 200 bytes each): raise --shards so a shard stays near a million
// ids (64 shards cover 64 million events).
package reconcile
