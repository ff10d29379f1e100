// Package sources reads raw input into the pipeline: [ReadFolder] reads a
// raw-log folder (SPEC §6 "Files") as a PCollection of model.Record, once
// (replay) or following it for new files (--follow).
//
// Impulse → one element per partition → a splittable DoFn with one
// restriction per partition, never split: a partition is one arrival order,
// read in order by one reader. The restriction is the partition's whole
// reading state (file, [rawlog.Mark], files read, [watermark.State]), so a
// checkpoint resumes exactly. A follower also lists the partitions every
// --discover-every and reads a new one from its first file.
//
// A record's timestamp is its WatermarkBefore, never its event time (see
// transforms/dedup.go). A call ends after MaxPerCall records or about 200 ms,
// since a runner reads an estimator only between calls; prism keeps one
// watermark per stage, so every estimator reports min(own, the source's
// other partitions) from a [watermark.Board].
//
// A replay finishes each restriction; a follower never does at a graceful
// stop ([StopSignal]), which would write FINAL rows for windows still
// correctable. Each file read completely yields a model.Checkpoint
// (FolderOptions.Resume, docs/restart.md). The folder is read through
// internal/files (docs/filesystems.md).
package sources
