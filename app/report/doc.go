// Package report renders the run report of both commands (--report) from one [Run]: cmd/launch
// fills the job's parts, cmd/reconcile the [Reconcile] part, cmd/advise the [Advice]; every form
// draws what is present. [Write] picks the form by extension:
//
//   - .html: one self-contained page that loads nothing from the network; its charts are inline
//     SVG and every value goes through html/template, so data cannot inject markup;
//   - .md: the same sections, sentences and tables in Markdown (content.go builds them once);
//   - .json: the same figures for machines.
//
// A report stays small: at most [MaxTracePoints] points a partition, the latest [LatestWindows]
// windows plus up to [MaxLateWindows] with LATE revisions. [TraceFolder] replays a raw-log folder
// with the file source's rules, so the watermarks drawn are those the too-late gate used.
package report
