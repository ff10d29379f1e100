// Package advise is the settings advisor of cmd/advise: it derives the out-of-order bound, allowed
// lateness, dedup retention and idle timeout from a raw log's measured delays. It replays the log
// with the stream's own rules (rawlog, rawlog.Stamper, event.Parse, watermark.Partition,
// triggers.Policy, event.Seen): the log is read once into compact records, each (bound, idle
// timeout) pair replayed once (a sim), and each lateness and retention judged over a sim. Across
// partitions, arrival order needs a clock (--arrival-field, or a Pub/Sub archive's publish times).
// With one, records merge by arrival and are judged by rule (a) and rule (b) as live; without,
// partitions replay one after another by their own watermarks, the late share is an upper bound,
// and ON_TIME timing and idleness are not measured. See docs/advise.md.
package advise
