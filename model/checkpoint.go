package model

// Checkpoint is a folder-source partition's reading state at the end of a
// file: the file read completely, where it ends (byte offset and line count
// of its complete lines), and the largest valid event time read in the
// partition up to there (ms, or NoWatermark). A restarted job resumes a
// partition after a checkpoint with its watermark restored from MaxValid,
// so every record after it is stamped exactly as in the first run.
type Checkpoint struct {
	Partition string
	File      string
	Offset    int64
	Line      int
	MaxValid  int64
	// Run is the token of the run that read the file (set by the sink's
	// progress writer, empty as the source emits it).
	Run string
}
