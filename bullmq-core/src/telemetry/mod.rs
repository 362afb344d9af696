//! Observability: `tracing` spans named and shaped as Node.js BullMQ's telemetry names its
//! spans, trace context carried inside jobs (`tm`/`omc`, feature `otel`), metrics through the
//! `metrics` facade, and the health of workers and event readers.
//!
//! Every span carries OpenTelemetry's messaging attributes (`messaging.system = "bullmq"`,
//! `messaging.destination.name`, `messaging.operation.*`, `messaging.message.id`) beside the
//! `bullmq.*` attributes Node.js BullMQ sets, and `otel.name` / `otel.kind` so that
//! `tracing-opentelemetry` exports them under Node's span names (`add <queue>.<job>`,
//! `process <queue>`, `complete <queue>`, …) and kinds. Spans are at `INFO` level; per-job
//! events at `DEBUG`; connection loss is a `WARN` event, its recovery an `INFO` one.

pub mod attr;
mod connection_log;
pub mod context;
mod fields;
mod health;
pub mod metrics;
pub mod spans;

pub use connection_log::ConnectionLog;
pub use health::{ConnectionHealth, HealthTracker, ReaderHealth, RunState, WorkerHealth};
