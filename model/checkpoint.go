package model

// Checkpoint is a folder-source partition's state after a complete file: its
// end (offset, lines) and the largest valid event time so far, from which a
// restart restores the watermark so records are stamped as in the first run.
type Checkpoint struct {
	Partition string
	File      string
	Offset    int64
	Line      int
	MaxValid  int64
	// Run is the reading run's token, set by the sink's progress writer.
	Run string
}
