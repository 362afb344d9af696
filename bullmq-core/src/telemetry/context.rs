//! Trace context carried inside a job, as `bullmq-otel` carries it: the producer's context
//! injected by the W3C trace-context propagator into a JSON object
//! (`{"traceparent":"00-…","tracestate":"…"}`), stored as the job's `telemetry.metadata`
//! (`tm`); `telemetry.omitContext` (`omc`) asks that none be written. The worker's attempt
//! span takes the extracted context as its parent, as Node's worker does.
//!
//! Without the `otel` feature nothing is injected and extraction does nothing.

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
pub(crate) fn set_string_array(span: &Span, key: &'static str, values: &[crate::JobId]) -> bool {
    imp::set_string_array(span, key, values)
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

#[cfg(feature = "otel")]
mod imp {
    use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
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
        TraceContextPropagator::new().inject_context(&cx, &mut carrier);
        serde_json::to_string(&carrier.0).ok()
    }

    pub(super) fn set_string_array(
        span: &Span,
        key: &'static str,
        values: &[crate::JobId],
    ) -> bool {
        if span.is_disabled() || !span.context().span().span_context().is_valid() {
            return false;
        }
        let values = values
            .iter()
            .map(|id| id.as_str().to_owned().into())
            .collect();
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
        let cx = TraceContextPropagator::new().extract(&Carrier(map));
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

    pub(super) fn set_string_array(
        _span: &Span,
        _key: &'static str,
        _values: &[crate::JobId],
    ) -> bool {
        false
    }
}
