//! Observability: `tracing` spans named and shaped as Node.js BullMQ's telemetry names its
//! spans, trace context carried inside jobs (`tm`/`omc`, feature `otel`), metrics through the
//! `metrics` facade, and the health of workers and event readers.
//!
//! Every span carries the `bullmq.*` attributes and events Node.js BullMQ with `bullmq-otel`
//! sets on its span of the same operation, with the same value types, and `otel.name` /
//! `otel.kind` so that `tracing-opentelemetry` exports them under Node's span names
//! (`add <queue>.<job>`, `process <queue>`, `complete <queue>`, …) and kinds. OpenTelemetry's
//! messaging attributes (`messaging.system = "bullmq"`, `messaging.destination.name`, …) are
//! added only when [`settings::set_messaging_attributes`] turns them on. Spans are at `INFO`
//! level; connection loss is a `WARN` event, its recovery an `INFO` one.
//!
//! With feature `otel`, `telemetry::otel` re-exports the OpenTelemetry crates this one is built
//! against, so an application names the same versions.

pub mod attr;
mod connection_log;
pub mod context;
mod fields;
mod health;
pub mod metrics;
pub mod settings;
pub mod spans;

/// The OpenTelemetry crates the `otel` feature is built against: depend on these (or on the
/// same versions) so that the tracer provider, propagator and bridge you set up are the ones
/// the library's spans and trace context go through.
///
/// ```
/// use bullmq_core::telemetry::otel::{opentelemetry, opentelemetry_sdk, tracing_opentelemetry};
/// use opentelemetry::trace::TracerProvider as _;
///
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
/// let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("bullmq"));
/// let _subscriber = tracing_subscriber::registry().with(layer);
/// ```
#[cfg(feature = "otel")]
pub mod otel {
    pub use opentelemetry;
    pub use opentelemetry_sdk;
    pub use tracing_opentelemetry;
}

pub use connection_log::ConnectionLog;
pub use health::{ConnectionHealth, HealthTracker, ReaderHealth, RunState, WorkerHealth};
