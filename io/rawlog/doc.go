// Package rawlog holds the rules for reading a raw-log folder (SPEC §3, §6)
// that every reader must apply identically: the file source of the stream
// (replay and --follow), the reconcile job and the test oracle. If two of
// them disagreed on a line number, on what is blank or on what is oversized,
// a replay would write a second audit row for the same record, or reconcile
// would "find" differences that are only reading differences.
//
// # Layout
//
// A source folder's subfolders are partitions. Files directly inside the
// folder form one more partition, named [RootPartition] ("."), because "."
// is what a path relative to the folder calls the folder itself: its
// positions are then "<file>:<line>", which is still the record's path
// relative to the source folder, as SPEC §5 asks. Deeper subfolders are not
// read.
//
// Within a partition, files are read in lexical (byte) order and lines in
// file order: that is arrival order. Names starting with '.' or '_' and names
// ending in ".tmp" or '~' are ignored, as are folders with such names: they
// are producers' temporary files (a producer writes ".000007.jsonl.tmp" and
// renames it in) or bookkeeping (Spark's and Hadoop's "_SUCCESS",
// "_temporary"). Every other regular file is read, whatever its extension:
// a stray file's lines go to quarantine rather than being skipped silently.
//
// # Lines
//
//   - Lines are numbered from 1 in each file, blank lines included, so a
//     position names the same bytes whoever reads the file.
//   - A blank line (empty, or only JSON whitespace: space, tab, CR) is skipped
//     and not counted as read.
//   - A trailing "\r" is stripped, so a file written with CRLF line endings
//     gives the same payloads (and audit rows) as one written with LF.
//   - A line whose content (without "\n" and a trailing "\r") is longer than
//     maxLine is oversized: it is yielded with at most [PrefixLimit] bytes and
//     Oversized set, and is never held whole in memory.
//   - A last line without a trailing newline is still a line (SPEC §3):
//     [Reader.Next] stops before it, since a producer may still be writing
//     it, and [Reader.Tail] yields it. A bounded read (a replay, [Scan])
//     reads it; a follower reads it once the file has stopped changing for
//     a settle time, or at a graceful stop. [Reader.Mark] says how far the
//     lines consumed go, so a follower can resume there.
package rawlog
