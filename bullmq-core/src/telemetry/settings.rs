//! Process-wide span settings: whether OpenTelemetry's messaging attributes are added to the
//! library's spans, and how trace context is carried inside jobs. Set them once at start-up,
//! before the first queue or worker runs; a change applies to spans made afterwards.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Off by default: with it off, every span's attribute set is the one Node.js BullMQ with
/// `bullmq-otel` emits, so one dashboard serves both runtimes.
static MESSAGING: AtomicBool = AtomicBool::new(false);

/// How the trace context of a job is written into it and read back from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Propagation {
    /// The application's global propagator (`opentelemetry::global::set_text_map_propagator`:
    /// B3, a composite, …) when one is set, W3C trace context otherwise (the default).
    #[default]
    Global,
    /// No propagation, as Node's `bullmq-otel` without a propagator: jobs carry an empty
    /// carrier (`{}`) and workers continue no producer's trace.
    Off,
}

static PROPAGATION: AtomicU8 = AtomicU8::new(0);

/// Adds OpenTelemetry's messaging semantic-convention attributes (`messaging.system`,
/// `messaging.destination.name`, `messaging.operation.type`, `messaging.operation.name`,
/// `messaging.message.id`, `messaging.batch.message_count`) to every span, beside the
/// `bullmq.*` ones. Off by default, because Node.js BullMQ emits none: turned on, queries and
/// dashboards written for Node's spans still match ours, but the attribute sets differ.
///
/// ```
/// bullmq_core::telemetry::settings::set_messaging_attributes(true);
/// assert!(bullmq_core::telemetry::settings::messaging_attributes());
/// bullmq_core::telemetry::settings::set_messaging_attributes(false);
/// ```
pub fn set_messaging_attributes(on: bool) {
    MESSAGING.store(on, Ordering::Relaxed);
}

/// Whether spans carry the messaging attributes (see [`set_messaging_attributes`]).
#[must_use]
#[inline]
pub fn messaging_attributes() -> bool {
    MESSAGING.load(Ordering::Relaxed)
}

/// Chooses how trace context is carried inside jobs (see [`Propagation`]).
///
/// ```
/// use bullmq_core::telemetry::settings::{self, Propagation};
/// settings::set_propagation(Propagation::Off);
/// assert_eq!(settings::propagation(), Propagation::Off);
/// settings::set_propagation(Propagation::Global);
/// ```
pub fn set_propagation(propagation: Propagation) {
    let code = match propagation {
        Propagation::Global => 0,
        Propagation::Off => 1,
    };
    PROPAGATION.store(code, Ordering::Relaxed);
}

/// How trace context is carried inside jobs (see [`set_propagation`]).
#[must_use]
pub fn propagation() -> Propagation {
    match PROPAGATION.load(Ordering::Relaxed) {
        1 => Propagation::Off,
        _ => Propagation::Global,
    }
}
