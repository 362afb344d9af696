//! Trace context carried inside a job, as `bullmq-otel` carries it: the producer's context
//! injected by the application's global propagator (W3C trace context when none is set; see
//! [`settings::set_propagation`](super::settings::set_propagation)) into a JSON object
//! (`{"traceparent":"00-…","tracestate":"…"}`), stored as the job's `telemetry.metadata`
//! (`tm`); `telemetry.omitContext` (`omc`) asks that none be written. The worker's attempt
//! span takes the extracted context as its parent, as Node's worker does. Also what only the
//! OpenTelemetry API can put on a span: string arrays and events.
//!
//! Without the `otel` feature nothing is injected, extraction does nothing, and events are
//! `DEBUG` events of target `bullmq` inside the span.

use tracing::Span;

use crate::options::Telemetry;

/// The serialized context of `span` (the `tm` a job added under it carries), or `None` when
/// the span is not exported to OpenTelemetry (no `tracing-opentelemetry` layer, a disabled
/// span, or the `otel` feature off).
#[must_use]
pub fn metadata_of(span: &Span) -> Option<String> {
    imp::inject(span)
}

/// Makes the context serialized in `metadata` (a job's `tm`) the parent of `span`; metadata
/// that does not parse is ignored (a job written by anyone may carry anything there).
pub fn set_parent_from(span: &Span, metadata: &str) {
    imp::extract_into(span, metadata);
}

/// Sets attribute `key` of `span` to the string array `values` when the span is exported to
/// OpenTelemetry (a `tracing` field holds no array); false when it is not (nothing set).
pub(crate) fn set_string_array(span: &Span, key: &'static str, values: &[&str]) -> bool {
    imp::set_string_array(span, key, values)
}

/// Adds event `name` with string attributes to `span` (an OpenTelemetry span event, as Node's
/// `span.addEvent`); nothing when the span is disabled.
pub(crate) fn add_event<const N: usize>(
    span: &Span,
    name: &'static str,
    attributes: [(&'static str, &str); N],
) {
    if !span.is_disabled() {
        imp::add_event(span, name, attributes);
    }
}

/// Whether `span` is exported to OpenTelemetry (its context is valid); false without the
/// `otel` feature.
pub(crate) fn is_exported(span: &Span) -> bool {
    !span.is_disabled() && imp::is_exported(span)
}

/// [`add_event`] on the current span (an attempt's `process` span), when it is one of ours.
pub(crate) fn add_current_event<const N: usize>(
    name: &'static str,
    attributes: [(&'static str, &str); N],
) {
    let current = Span::current();
    if current.metadata().is_some_and(|m| m.target() == "bullmq") {
        add_event(&current, name, attributes);
    }
}

/// The context a job added under `span` carries: `span`'s, or, when a filter disabled it (the
/// `bullmq` target filtered out), the caller's current span's, so that the application's trace
/// still reaches the worker. `span` is not cloned: a clone is two atomic updates and a
/// subscriber call per job.
fn carried_metadata(span: &Span) -> Option<String> {
    if span.is_disabled() {
        metadata_of(&Span::current())
    } else {
        metadata_of(span)
    }
}

/// The telemetry a job added under `span` carries, when its own options ask for none
/// (Node's `Queue#add`): the span's context unless `omitContext`, replacing any metadata
/// given.
pub(crate) fn for_add(span: &Span, given: Option<Telemetry>) -> Option<Telemetry> {
    if given.as_ref().and_then(|t| t.omit_context) == Some(true) {
        return given;
    }
    match carried_metadata(span) {
        Some(metadata) => Some(Telemetry {
            metadata: Some(metadata),
            omit_context: None,
        }),
        None => given,
    }
}

/// The telemetry of a job added in bulk, in a flow or by a scheduler (Node's `addBulk`,
/// `addNode`, `upsertJobScheduler`): metadata given wins, else the span's context unless
/// `omitContext`.
#[must_use]
pub fn for_child(span: &Span, given: Option<Telemetry>) -> Option<Telemetry> {
    let omit = given.as_ref().and_then(|t| t.omit_context);
    let metadata = given.as_ref().and_then(|t| t.metadata.clone()).or_else(|| {
        (omit != Some(true))
            .then(|| carried_metadata(span))
            .flatten()
    });
    if metadata.is_some() || omit == Some(true) {
        Some(Telemetry {
            metadata,
            omit_context: omit,
        })
    } else {
        given
    }
}

/// Sets the telemetry of `opts`, a job added in bulk, in a flow or by a scheduler, as
/// [`for_child`] says; and, as Node does when its telemetry is set up, a job that omits the
/// context without metadata of its own is stored with `tm: false` beside `omc: true`.
pub fn apply_to_child(span: &Span, opts: &mut crate::JobOptions) {
    let given = opts.telemetry.take();
    let omitted = given
        .as_ref()
        .is_some_and(|t| t.omit_context == Some(true) && t.metadata.is_none());
    opts.telemetry = for_child(span, given);
    if omitted && carried_metadata(span).is_some() {
        // Kept as a raw option, which the codec writes in `tm`'s (or `metadata`'s) place.
        opts.extra
            .insert("tm".to_owned(), serde_json::Value::Bool(false));
    }
}

#[cfg(feature = "otel")]
mod imp {
    use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::TraceContextPropagator;

    use crate::telemetry::settings::{self, Propagation};
    use serde_json::{Map, Value};
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// A JSON object as the propagator's carrier; insertion order is kept (`traceparent`
    /// first, as Node's propagator writes it).
    struct Carrier(Map<String, Value>);

    impl Injector for Carrier {
        fn set(&mut self, key: &str, value: String) {
            // Node's propagator leaves out an empty `tracestate`; Rust's writes `""`.
            if key == "tracestate" && value.is_empty() {
                return;
            }
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }

    impl Extractor for Carrier {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    pub(super) fn inject(span: &Span) -> Option<String> {
        if span.is_disabled() {
            return None;
        }
        let cx = span.context();
        if !cx.span().span_context().is_valid() {
            return None;
        }
        let mut carrier = Carrier(Map::new());
        // Off: the empty carrier Node's `bullmq-otel` writes without a propagator.
        if settings::propagation() == Propagation::Global {
            with_propagator(|p| p.inject_context(&cx, &mut carrier));
        }
        serde_json::to_string(&carrier.0).ok()
    }

    /// Runs `f` with the application's global propagator, or W3C trace context when none is
    /// set (the global one is then the no-op propagator, which propagates no field).
    fn with_propagator<T>(mut f: impl FnMut(&dyn TextMapPropagator) -> T) -> T {
        opentelemetry::global::get_text_map_propagator(|global| {
            if global.fields().next().is_some() {
                f(global)
            } else {
                f(&TraceContextPropagator::new())
            }
        })
    }

    pub(super) fn is_exported(span: &Span) -> bool {
        span.context().span().span_context().is_valid()
    }

    pub(super) fn add_event<const N: usize>(
        span: &Span,
        name: &'static str,
        attributes: [(&'static str, &str); N],
    ) {
        let attributes = attributes
            .into_iter()
            .map(|(k, v)| opentelemetry::KeyValue::new(k, v.to_owned()))
            .collect();
        span.add_event(name, attributes);
    }

    pub(super) fn set_string_array(span: &Span, key: &'static str, values: &[&str]) -> bool {
        if span.is_disabled() || !span.context().span().span_context().is_valid() {
            return false;
        }
        let values = values.iter().map(|v| (*v).to_owned().into()).collect();
        span.set_attribute(
            key,
            opentelemetry::Value::Array(opentelemetry::Array::String(values)),
        );
        true
    }

    pub(super) fn extract_into(span: &Span, metadata: &str) {
        if span.is_disabled() {
            return;
        }
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(metadata) else {
            return;
        };
        if settings::propagation() == Propagation::Off {
            return;
        }
        let carrier = Carrier(map);
        let cx = with_propagator(|p| p.extract(&carrier));
        if cx.span().span_context().is_valid() {
            let _ = span.set_parent(cx);
        }
    }
}

#[cfg(not(feature = "otel"))]
mod imp {
    use tracing::Span;

    pub(super) fn inject(_span: &Span) -> Option<String> {
        None
    }

    pub(super) fn extract_into(_span: &Span, _metadata: &str) {}

    pub(super) fn set_string_array(_span: &Span, _key: &'static str, _values: &[&str]) -> bool {
        false
    }

    pub(super) fn is_exported(_span: &Span) -> bool {
        false
    }

    pub(super) fn add_event<const N: usize>(
        span: &Span,
        name: &'static str,
        attributes: [(&'static str, &str); N],
    ) {
        tracing::event!(
            target: "bullmq",
            parent: span,
            tracing::Level::DEBUG,
            attributes = ?attributes,
            "{name}"
        );
    }
}
