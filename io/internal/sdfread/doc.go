// Package sdfread holds the pieces the two reading splittable DoFns share,
// the folder source (io/sources) and the Pub/Sub source
// (io/sources/pubsub): the restriction tracker that claims whole states and
// self-checkpoints (CheckpointTracker), the manual watermark estimator and
// the DoFn methods both share (WatermarkEstimator, Shape), why a reader's
// call ended (Outcome) and what the runner hears then (Continue), and the
// emit of a stamped record (Emit). The watermark rules themselves are the
// watermark package's; a reader only calls them.
package sdfread
