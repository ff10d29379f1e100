// Package advise is the settings advisor of cmd/advise: it derives the out-of-order bound, allowed
// lateness, dedup retention and idle timeout from a raw log's measured delays, replaying the log
// with the stream's own rules (rawlog.Stamper, watermark.Partition, triggers.Policy, event.Seen).
// Without an arrival clock (--arrival-field, or a Pub/Sub archive's publish times) partitions
// replay one after another, the late share is an upper bound, and ON_TIME timing and idleness are
// not measured. See docs/advise.md.
package advise
