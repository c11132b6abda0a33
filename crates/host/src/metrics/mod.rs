//! What a run measures: counters bumped by the model, the time series, windowed metrics and
//! `summary.json`, the trace of what every CPU ran, and the classification of migrations.
//!
//! - `stats`: the counters and the time series.
//! - `summary`: windowed metrics (the `results.csv` columns) and the `summary.json` structure.
//! - `app`, `sink`: metrics of event-driven programs and HTTP traffic, and of a `stream_sink`.
//! - `trace`: nested slices of what every CPU ran, streamed with bounded memory.
//! - `migration_class`: paper 001's unintended (ping-pong) migrations and settling times.

pub mod app;
pub mod migration_class;
pub mod sink;
pub mod stats;
pub mod summary;
pub mod trace;
