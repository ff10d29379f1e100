// Package rawlog holds the rules for reading a raw-log folder (SPEC §3, §6)
// that the stream's source, reconcile and the test oracle must apply
// identically, or a replay would write a second audit row for a record.
//
// A folder's subfolders are partitions; files directly inside it form the
// partition [RootPartition] ("."), whose positions are "<file>:<line>".
// Within a partition, files are read in lexical order and lines in file
// order: arrival order. Names starting with '.' or '_' or ending in ".tmp"
// or '~' are ignored (producers' temporary files, "_SUCCESS"); every other
// file is read, so a stray file's lines go to quarantine.
//
// Lines are numbered from 1, blank ones included; a blank line (only JSON
// whitespace) is skipped; a trailing "\r" is stripped; a line longer than
// maxLine is yielded as an oversized [PrefixLimit]-byte prefix, never held
// whole. A last line without a newline is still a line (SPEC §3): Next
// stops before it and [Reader.Tail] yields it.
package rawlog
