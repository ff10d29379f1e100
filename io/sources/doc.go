// Package sources reads raw input into the pipeline: [ReadFolder] reads a
// raw-log folder (SPEC §6 "Files") as a PCollection of model.Record, once
// (replay) or following it for new files (--follow).
//
// # Shape
//
// Impulse → one element per partition → a splittable DoFn with one
// restriction per partition, never split: a partition is one arrival order,
// and its watermark and rule-(a) verdicts only mean something if one reader
// reads it in order. A follower also lists the partitions every
// --discover-every and reads a new one from its first file; until it has
// data, its watermark follows the others'.
//
// The restriction is the partition's whole reading state (file, [rawlog.Mark],
// files read, [watermark.State]), so a checkpoint resumes exactly and every
// record gets the same WatermarkBefore however the runner bundles the
// partition. Tracker, estimator and call ending are shared with the Pub/Sub
// source (io/internal/sdfread).
//
// # Records and watermark
//
// A record carries its position, line, ReadAt, WatermarkBefore and the
// [rawlog.Stamper]'s verdict, so validation downstream does not parse it
// again. Its timestamp is WatermarkBefore, never its event time: the runner
// sees it late exactly when rule (a) does (see transforms/dedup.go).
//
// Each restriction's estimator reports [watermark.Partition.Reported]: the
// event-time watermark while active, and after --idle-timeout the idle rule
// of --idle-advance (docs/idle-partitions.md). A call ends after MaxPerCall
// records or about 200 ms, since a runner reads an estimator only between
// calls. Prism keeps one output watermark per stage, the minimum over the
// last bundle's residuals only, so every estimator reports min(own, the
// other partitions of its source in this process) from a [watermark.Board].
//
// # Replay, follow, stop
//
// A replay reads what is there and finishes each restriction, which moves
// the watermark to the end of time (every window gets ON_TIME and FINAL). A
// follower polls every PollInterval; files are read in lexical order, each
// once it appears, and are immutable from then on. A last line without a
// newline is read once a later file exists, the file has kept its size for
// --settle, or at a graceful stop. An I/O error fails a replay; a follower
// logs it and retries at the next poll. A file appearing out of lexical order
// is read next, with a warning (the restriction remembers 256 names).
//
// A graceful stop is a [StopSignal]; a restriction is never finished at a
// stop, since that would write FINAL rows for windows still correctable.
// Each file read completely yields a model.Checkpoint, which the launcher
// stores and resumes from (FolderOptions.Resume, docs/restart.md).
//
// The folder is read through io/files: local, or a prefix on any filesystem
// Beam serves, where a producer writes each file as one object under its
// final name (docs/filesystems.md).
package sources
