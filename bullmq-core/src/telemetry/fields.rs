//! Recording values on the library's spans by field position. `Span::record("name", …)` looks
//! the name up among the span's 23 declared fields (a string comparison with each one before
//! it) and makes one call through the subscriber per value; here each value goes at its known
//! position in `op_span!` (a test checks the names there), all in one call.

use std::sync::OnceLock;

use tracing::field::{Field, Value, ValueSet};
use tracing::span::Record;
use tracing::{Metadata, Span};

/// How many fields `op_span!` declares.
const OP_FIELDS: usize = 23;

/// A field of every operation span: its position in `op_span!`'s declaration and its name.
#[derive(Debug, Clone, Copy)]
pub(super) struct Key {
    index: usize,
    /// Only for the test: a key is copied into each record, so it is kept one word long.
    #[cfg(test)]
    name: &'static str,
}

#[cfg(test)]
impl Key {
    /// Whether `span` is an operation span with this field at this key's position.
    pub(super) fn found_in(self, span: &Span) -> bool {
        span.metadata().is_some_and(|meta| {
            is_op_span(meta)
                && meta.fields().iter().nth(self.index).map(|f| f.name()) == Some(self.name)
        })
    }

    /// The field's name.
    pub(super) fn name(self) -> &'static str {
        self.name
    }
}

/// Declares the positions of `op_span!`'s fields; a test checks them against the macro.
macro_rules! keys {
    ($($key:ident = $index:literal $name:literal),* $(,)?) => {
        $(
            #[doc = concat!("`", $name, "`.")]
            pub(super) const $key: Key = Key {
                index: $index,
                #[cfg(test)]
                name: $name,
            };
        )*
        /// Every key, for the test against `op_span!`.
        #[cfg(test)]
        pub(super) const ALL: &[Key] = &[$($key),*];
    };
}

keys! {
    MESSAGE_ID = 6 "messaging.message.id",
    BATCH_COUNT = 7 "messaging.batch.message_count",
    JOB_NAME = 10 "bullmq.job.name",
    JOB_ID = 11 "bullmq.job.id",
    ATTEMPTS_MADE = 12 "bullmq.job.attempts.made",
    FINISHED_TIMESTAMP = 14 "bullmq.job.attempt_finished_timestamp",
    BULK_COUNT = 15 "bullmq.job.bulk.count",
    BULK_NAMES = 16 "bullmq.job.bulk.names",
    SCHEDULER_ID = 17 "bullmq.job.scheduler.id",
    FLOW_NAME = 18 "bullmq.flow.name",
}

/// Records `values` on `span` in one call; nothing when it is disabled.
pub(super) fn record<const N: usize>(span: &Span, values: [(Key, &dyn Value); N]) {
    if span.is_disabled() {
        return;
    }
    // `record_job` is public: a span of the caller's with as many fields is not ours.
    if let Some(meta) = span.metadata().filter(|m| is_op_span(m)) {
        with_value_set(meta, values, |set| {
            span.record_all(set);
        });
    }
}

/// The fields of `keys` on the spans of one callsite (the first one recorded), found once: a
/// value set of just these fields costs a fraction of one of all 23 (per `add`, its id).
pub(super) struct Cached<const N: usize> {
    keys: [Key; N],
    fields: OnceLock<Option<[Field; N]>>,
}

impl<const N: usize> Cached<N> {
    /// The fields of `keys`, to be found at the first record.
    pub(super) const fn new(keys: [Key; N]) -> Self {
        Self {
            keys,
            fields: OnceLock::new(),
        }
    }

    /// Records `values` (one per key, in order) on `span` in one call; through [`record`] for
    /// a span of another callsite.
    pub(super) fn record(&self, span: &Span, values: [&dyn Value; N]) {
        let Some(meta) = span.metadata().filter(|_| !span.is_disabled()) else {
            return;
        };
        let cached = self.fields.get_or_init(|| {
            let fields = meta.fields();
            if !is_op_span(meta) {
                return None;
            }
            let found: Option<Vec<Field>> = self
                .keys
                .iter()
                .map(|k| fields.iter().nth(k.index))
                .collect();
            found.and_then(|found| found.try_into().ok())
        });
        match cached {
            Some(cached) if cached.iter().all(|f| f.callsite() == meta.callsite()) => {
                let pairs: [(&Field, Option<&dyn Value>); N] =
                    std::array::from_fn(|i| (&cached[i], Some(values[i])));
                span.record_all(&meta.fields().value_set(&pairs));
            }
            _ => record::<N>(span, std::array::from_fn(|i| (self.keys[i], values[i]))),
        }
    }
}

/// Records `values` on the current span (an attempt's, inside its `process` span) without
/// taking a handle to it (`Span::current()` is a clone and a close through the subscriber).
pub(super) fn record_current<const N: usize>(values: [(Key, &dyn Value); N]) {
    tracing::dispatcher::get_default(|dispatch| {
        let current = dispatch.current_span();
        if let (Some(id), Some(meta)) = (current.id(), current.metadata())
            && is_op_span(meta)
        {
            with_value_set(meta, values, |set| dispatch.record(id, &Record::new(set)));
        }
    });
}

/// Whether `meta` is an operation span's (made by `op_span!`): the library's target and as
/// many fields (a test checks each key's name at its position). The current span may be an
/// application's, when a filter disabled ours.
fn is_op_span(meta: &Metadata<'_>) -> bool {
    meta.fields().len() == OP_FIELDS && meta.target() == "bullmq"
}

/// Calls `f` with `values` as a value set of all of an operation span's fields (those not in
/// `values` without a value).
#[inline]
fn with_value_set<const N: usize>(
    meta: &'static Metadata<'static>,
    values: [(Key, &dyn Value); N],
    f: impl FnOnce(&ValueSet<'_>),
) {
    let mut all: [Option<&dyn Value>; OP_FIELDS] = [None; OP_FIELDS];
    for (key, value) in values {
        if let Some(slot) = all.get_mut(key.index) {
            *slot = Some(value);
        }
    }
    f(&meta.fields().value_set_all(&all));
}
