// Package sdfread holds what the folder and Pub/Sub reading SDFs share: the
// tracker (CheckpointTracker), the estimator and shared DoFn methods
// (WatermarkEstimator, Shape), why a call ended (Outcome, Continue), and the
// emit of a stamped record (Emit).
package sdfread
