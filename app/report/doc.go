// Package report renders the run report of both commands (--report): what
// a streaming run read, counted and set aside, how each partition's
// watermark chased event time, how late events arrived, how every window's
// result evolved from EARLY to FINAL, and what a reconcile run found. Both
// commands hand it one [Run]: cmd/launch fills the job's parts,
// cmd/reconcile the [Reconcile] part; every form draws what is present, so
// the two reports share their settings, tables and row cells. A snapshot
// row is spelled as JSON by one mapping ([JSONRow], SPEC §5's names).
//
// [Write] picks the form from the path's extension:
//   - .html: one self-contained page. It loads nothing from the network (no
//     fonts, scripts or style sheets from elsewhere, no JavaScript at all),
//     so it opens the same on an air-gapped machine, in a mail attachment or
//     in a CI artefact viewer. The charts are inline SVG drawn here, and every
//     value from the run goes through html/template, so a payload, a
//     dimension value or a partition name cannot inject markup.
//   - .md: the same figures as Markdown tables, for a pull request, a ticket
//     or a terminal.
//   - .json: the same figures for machines.
//
// A report stays small however big the run is: a partition's trace keeps at
// most [MaxTracePoints] points, and the windows shown are the latest
// [LatestWindows] plus those that received LATE revisions (at most
// [MaxLateWindows] of them); the report says how many it left out. The sink
// keeps the full history.
//
// [TraceFolder] builds the trace and delay figures from a raw-log folder by
// replaying each partition with the very rules the file source applies
// (rawlog.Scan and rawlog.Stamper), so the watermarks it draws are the ones
// the too-late gate judged against.
package report
