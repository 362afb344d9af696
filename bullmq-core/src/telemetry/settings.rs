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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id};
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    use super::{Propagation, set_messaging_attributes, set_propagation};
    use crate::telemetry::{context, spans};

    /// Keeps the names of the fields each new span was given a value for.
    #[derive(Clone, Default)]
    struct Names(Arc<Mutex<Vec<Vec<String>>>>);

    struct Visitor<'a>(&'a mut Vec<String>);

    impl Visit for Visitor<'_> {
        fn record_debug(&mut self, field: &Field, _value: &dyn std::fmt::Debug) {
            self.0.push(field.name().to_owned());
        }
    }

    impl<S: tracing::Subscriber> Layer<S> for Names {
        fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
            let mut names = Vec::new();
            attrs.record(&mut Visitor(&mut names));
            self.0.lock().expect("names").push(names);
        }
    }

    /// The settings are process-wide, so one test changes them all and restores them.
    #[test]
    fn messaging_attributes_and_propagation_are_switched_process_wide() {
        let names = Names::default();
        #[cfg(feature = "otel")]
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry().with(names.clone());
        #[cfg(feature = "otel")]
        let subscriber = {
            use opentelemetry::trace::TracerProvider as _;
            subscriber.with(tracing_opentelemetry::layer().with_tracer(provider.tracer("t")))
        };
        let _guard = tracing::subscriber::set_default(subscriber);

        drop(spans::add("q", "n"));
        set_messaging_attributes(true);
        drop(spans::add("q", "n"));
        set_messaging_attributes(false);
        let recorded = names.0.lock().expect("names").clone();
        let messaging = |fields: &Vec<String>| {
            fields
                .iter()
                .filter(|f| f.starts_with("messaging."))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(messaging(&recorded[0]), Vec::<String>::new());
        assert_eq!(
            messaging(&recorded[1]),
            [
                "messaging.system",
                "messaging.destination.name",
                "messaging.operation.type",
                "messaging.operation.name"
            ]
        );

        #[cfg(feature = "otel")]
        {
            use opentelemetry::trace::TraceContextExt as _;
            use tracing_opentelemetry::OpenTelemetrySpanExt as _;
            let span = spans::add("q", "n");
            let carried = context::metadata_of(&span).expect("a context");
            assert!(carried.starts_with("{\"traceparent\":\"00-"), "{carried}");
            set_propagation(Propagation::Off);
            // Node's `bullmq-otel` without a propagator writes an empty carrier, and reads none.
            assert_eq!(context::metadata_of(&span).as_deref(), Some("{}"));
            let child = spans::add("q", "n");
            context::set_parent_from(&child, &carried);
            let parent = child.context().span().span_context().trace_id();
            set_propagation(Propagation::Global);
            assert_ne!(parent, span.context().span().span_context().trace_id());
            let resumed = spans::add("q", "n");
            context::set_parent_from(&resumed, &carried);
            assert_eq!(
                resumed.context().span().span_context().trace_id(),
                span.context().span().span_context().trace_id()
            );
        }
        #[cfg(not(feature = "otel"))]
        {
            set_propagation(Propagation::Off);
            assert_eq!(context::metadata_of(&spans::add("q", "n")), None);
            set_propagation(Propagation::Global);
        }
    }
}
