// Package advise is the settings advisor of cmd/advise: it derives the
// out-of-order bound, the allowed lateness, the dedup retention and the idle
// timeout from a raw log's measured delays, instead of guessing them.
//
// It replays the log as the stream would read it live, with the stream's
// own rules: rawlog for lines, positions and the Pub/Sub archive's
// sidecars, rawlog.Stamper and event.Parse for validation and fingerprints,
// watermark.Partition for each partition's watermark, its idleness and what
// it reports, triggers.Policy for windows and closing, and event.Seen for
// the order of verdicts (the offline oracle's replay rule). The log is read
// once into compact records; each (bound, idle timeout) pair is then
// replayed once over them (a sim), and each lateness and retention judged
// over a sim (a judgement).
//
// Arrival order. Within a partition it is file order, as the stream reads.
// Across partitions it needs an arrival clock: a payload field
// (--arrival-field, e.g. a collector's received_at) or a Pub/Sub archive's
// publish times. With one, records are merged by arrival instant, every
// partition reports its watermark at every instant something can change,
// the pipeline watermark is the minimum of the reports (the idle ones
// leaving it), and a record is judged as the stream judges it: too late
// when its window closed by its partition's watermark (rule (a)) or by the
// pipeline's (rule (b)), late (a LATE revision) when the pipeline watermark
// had passed its window end. Without one, partitions are replayed one
// after another and judged by their own watermarks, exactly as a bounded
// replay's rule (a) judges them; the late share is then an upper bound for
// a live job, and ON_TIME timing and idleness are not measured.
//
// What it cannot know: copies that never reached the log (a retry lost
// upstream), fields that are not in the payload (a segment derived
// elsewhere), and, without an arrival clock, anything about processing
// time. See docs/advise.md.
package advise
