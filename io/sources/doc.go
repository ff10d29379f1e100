// Package sources reads raw input into the pipeline: [ReadFolder] reads a
// raw-log folder (SPEC §6 "Files") as a PCollection of model.Record, once
// (replay) or following it for new files (--follow).
//
// # Shape
//
// Impulse → one element per partition → a splittable DoFn with exactly one
// restriction per partition, never split further: a partition is a sequence
// (arrival order), and its watermark and its rule-(a) verdicts only mean
// something if one reader reads it in order.
//
// The partitions are listed when the pipeline is constructed
// ([rawlog.ListPartitions]). A follower also lists them again every
// FolderOptions.DiscoverEvery (--discover-every) while it runs, and a
// partition that appeared since is read from its first file by a reader of
// its own (a stateful step emits each new partition once). Until it has data,
// a discovered partition's watermark follows the others'; from its first
// valid record on its own watermark counts, and its records that are older
// than the pipeline watermark are late or too late, as a returning idle
// partition's are. A replay reads the partitions that exist at the start.
//
// The restriction is the partition's whole reading state, so a checkpoint
// resumes exactly: the file being read, its byte offset and line number
// ([rawlog.Mark]), which files are already read, and the partition's
// [watermark.State] (largest valid event time, last activity, idleness,
// the watermark last reported). The reader resumes a [rawlog.Stamper] from
// it on every call, so every record gets the same WatermarkBefore however
// the runner bundles or checkpoints the partition. The tracker, the
// estimator and the end of a call are shared with the Pub/Sub source
// (io/internal/sdfread).
//
// # Records and timestamps
//
// Each record carries Partition, Position, Line (a prefix and Oversized for
// a line longer than --max-line), ReadAt (processing time) and
// WatermarkBefore (the partition watermark just before it, from the
// Stamper), and the Stamper's verdict (Valid or Rejected): stamping must
// validate the line anyway, so validation downstream does not parse it
// again. Its element timestamp is WatermarkBefore (or the minimum
// timestamp before the first valid event), never its event time: a record
// is late in the runner's eyes exactly when rule (a) of the too-late gate
// says its partition had already passed it, and the timestamp holds the
// downstream watermark until the record is counted (see transforms/dedup.go).
//
// # Watermark
//
// Each restriction has its own watermark estimator whose value is the
// partition's reported watermark ([watermark.Partition.Reported]): the
// event-time watermark (largest valid event time - bound) while the
// partition is active; once it produced nothing for --idle-timeout
// (processing time) it leaves the pipeline minimum: it advances with
// now - bound (--idle-advance=processing-time, the default) or follows the
// lowest active partition and holds when every partition is idle (hold; see
// [watermark.Partition.Report], and the board below for how a reader
// knows the others). Active→idle and idle→active transitions are logged, and counted
// (active→idle, like [watermark.Tracker.IdleTransitions]) in the counter
// revenue/idle_transitions_<partition>; the gauge
// revenue/watermark_lag_ms_<partition> is processing time minus the reported
// watermark, and revenue/partition_idle_<partition> is 1 while it is idle.
//
// A runner only reads an estimator when ProcessElement returns, so a call
// reads at most MaxPerCall records or about 200 ms worth and then checkpoints
// (ResumeProcessingIn(0)): the watermark advances during a replay rather
// than jumping from the start to the end of time.
//
// Prism (v2.77.0) keeps one estimated output watermark per stage and
// overwrites it with the minimum over the residuals of the last bundle only.
// When partitions end up in different bundles (different resume delays, or
// a split of the bundle's element list), a bundle holding only a fast
// partition would move the stage watermark past a slow partition. So every
// estimator reports min(own, every other partition of the same source in
// this process): a [watermark.Board] per source, held process-wide by
// internal/localrunner (Shared), that each call updates. On a runner
// that computes the minimum itself this only lowers an estimate to what the
// runner computes anyway; entries not refreshed for a while (a partition
// processed on another worker) stop counting, so they cannot hold the
// watermark forever.
//
// # Replay and follow
//
// Replay (Follow false) reads what is there and ends: at the end of a
// partition the restriction is finished, the runner moves that partition's
// watermark to the end of time, and once every partition is finished every
// window gets its ON_TIME and FINAL rows. A last line without a newline is
// read as a line (SPEC §3), and is logged.
//
// Follow re-lists the partition's files when it runs out of data and polls
// every PollInterval. Files are read in lexical order, each once it appears,
// and are immutable from then on; a file whose last line has no newline yet
// is waited on (and the line read once it gets one) while it is the
// partition's newest file, and read as it is once the file has kept its size
// for FolderOptions.Settle (--settle); the progress line counts such lines
// as pending (PendingTails). Once a later file exists, the reader reads the
// file to its end one more time, its unterminated last line included, and
// moves on, as reconcile reads it. A graceful stop's last pass reads the
// current file to its end the same way.
//
// An I/O error fails a replay; a follower logs it and tries again at the
// next poll, so a transient error does not end a long-running job.
//
// A file that appears with a name sorting before a file already read breaks
// the producer contract (lexical order is arrival order) but holds real
// data: it is logged as a warning and read next, after the current file.
// To know which names are new, the restriction remembers the last 256 file
// names it read; names below that window count as read.
// A file appearing that far behind is logged as an error and not read by the
// stream (reconcile reads the whole log and reports it).
//
// # Stopping
//
// A graceful stop is a [StopSignal] (FolderOptions.Stop): an object named
// for the run in a control folder, which every reader, on any worker, looks
// for through Beam's filesystem at most once per poll interval. Once it is
// there a follower reads its current file to its end, unterminated last line
// included, and then reads nothing more; no reader finishes its restriction,
// because a finished
// restriction moves the watermark to the end of time and would write FINAL
// rows for windows whose correction period has not passed. The job is then
// cancelled by the launcher; a restarted job resumes where FolderOptions.Resume
// says. Before a streaming run the launcher writes and removes a
// probe object there ([StopSignal.Probe]), so that a control folder it
// cannot write is refused at start rather than found at the stop.
//
// # Progress
//
// [ReadFolder] also returns a model.Checkpoint each time a
// partition has read a file completely: the file, its end mark and the
// partition's largest valid event time. cmd/launch stores them in the SQLite
// sink (sinks.WriteProgress) and, on a restart, resumes each partition after
// the last checkpoint that lies before what dedup and the open windows need
// (docs/restart.md), with its watermark restored, so every record after it
// is stamped as in the first run. Without a stop signal, stopping is the
// runner's business: a drain truncates a follower's restriction (the
// SDK's default drops an unbounded remainder), which ends it and so moves the
// watermark to the end of time, as drain semantics say; cancel and restart
// instead when FINAL rows must not be written early.
//
// # Remote folders
//
// The folder is read through Beam's io/filesystem (package files): a local
// folder, or a prefix on any filesystem Beam serves (gs://bucket/raw; a
// partition is then the next segment of the object names, and an empty one
// is a placeholder object "raw/p0/"). Object stores have no appends: a
// follower looks for new objects; an object is read once it is listed,
// which happens only when its upload has completed, so a producer writes
// each file as one object under its final name (or copies it there from a
// hidden or .tmp name) and never rewrites it. Polling an object already
// read to its end costs a metadata request, not a download.
package sources
