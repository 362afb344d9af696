//! A `tracing` layer that keeps every span (name, fields, parent) and event (level, fields, the
//! span it happened in), for tests that assert what the library records.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as recorded.
#[derive(Debug, Clone)]
pub struct SpanRec {
    pub id: u64,
    pub name: &'static str,
    pub parent: Option<u64>,
    pub fields: BTreeMap<String, String>,
}

impl SpanRec {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// Asserts each `(field, value)` is recorded on this span, and that its fields are exactly
    /// `names` (in their sorted order).
    pub fn assert_fields(&self, values: &[(&str, &str)], names: &[&str]) {
        for (key, value) in values {
            assert_eq!(self.field(key), Some(*value), "{key} on {self:?}");
        }
        let fields: Vec<_> = self.fields.keys().map(String::as_str).collect();
        assert_eq!(fields, names, "the fields of {self:?}");
    }
}

/// One event as recorded.
#[derive(Debug, Clone)]
pub struct EventRec {
    pub level: Level,
    /// The innermost span it happened in.
    pub span: Option<&'static str>,
    pub fields: BTreeMap<String, String>,
}

impl EventRec {
    pub fn message(&self) -> &str {
        self.fields.get("message").map_or("", String::as_str)
    }
}

#[derive(Default, Clone)]
pub struct Captured {
    spans: Arc<Mutex<Vec<SpanRec>>>,
    events: Arc<Mutex<Vec<EventRec>>>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl Captured {
    /// Captures on this thread until the guard drops (use a current-thread runtime).
    pub fn start() -> (Self, tracing::subscriber::DefaultGuard) {
        let captured = Self::default();
        let subscriber = tracing_subscriber::registry().with(captured.clone());
        (captured, tracing::subscriber::set_default(subscriber))
    }

    pub fn spans(&self) -> Vec<SpanRec> {
        self.spans.lock().unwrap().clone()
    }

    pub fn events(&self) -> Vec<EventRec> {
        self.events.lock().unwrap().clone()
    }

    /// Spans named `name` whose field `key` is `value`.
    pub fn spans_where(&self, name: &str, key: &str, value: &str) -> Vec<SpanRec> {
        self.spans()
            .into_iter()
            .filter(|s| s.name == name && s.field(key) == Some(value))
            .collect()
    }

    /// The WARN events of a connection lost (message starting with `lost`) and the INFO ones
    /// of its recovery (message `recovered`): asserts there are some of each, at those levels,
    /// each naming the server as `server` accepts it; returns the recoveries.
    pub fn assert_loss_logged(
        &self,
        lost: &str,
        recovered: &str,
        server: impl Fn(&str) -> bool,
    ) -> Vec<EventRec> {
        let events = self.events();
        let of = |f: &dyn Fn(&EventRec) -> bool| -> Vec<EventRec> {
            events.iter().filter(|e| f(e)).cloned().collect()
        };
        let losses = of(&|e| e.message().starts_with(lost));
        let recoveries = of(&|e| e.message() == recovered);
        assert!(!losses.is_empty(), "a WARN `{lost}`: {events:?}");
        assert!(!recoveries.is_empty(), "an INFO `{recovered}`: {events:?}");
        assert!(losses.iter().all(|e| e.level == Level::WARN), "{losses:?}");
        assert!(
            recoveries.iter().all(|e| e.level == Level::INFO),
            "{recoveries:?}"
        );
        for e in losses.iter().chain(&recoveries) {
            let named = e.fields.get("server.address").map(String::as_str);
            assert!(named.is_some_and(&server), "{e:?}");
        }
        recoveries
    }

    /// The children of span `id`.
    pub fn children(&self, id: u64) -> Vec<SpanRec> {
        self.spans()
            .into_iter()
            .filter(|s| s.parent == Some(id))
            .collect()
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Captured {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = if let Some(p) = attrs.parent() {
            Some(p.into_u64())
        } else if attrs.is_contextual() {
            ctx.lookup_current().map(|s| s.id().into_u64())
        } else {
            None
        };
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.spans.lock().unwrap().push(SpanRec {
            id: id.into_u64(),
            name: attrs.metadata().name(),
            parent,
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        // Ids are reused once a span closes: the newest span with the id is the live one.
        if let Some(span) = spans.iter_mut().rev().find(|s| s.id == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(EventRec {
            level: *event.metadata().level(),
            span: ctx.event_span(event).map(|s| s.name()),
            fields,
        });
    }
}
