//! `JobOptions` to and from the stored shape.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::keys::{self, KeyStyle};
use super::wire::{WireMap, WireValue};
use crate::job::JobId;
use crate::options::{
    Backoff, BackoffStrategy, Deduplication, InvalidOption, JobOptions, KeepJobs, KeyOrder,
    ParentOptions, RepeatOptions, Telemetry, UnixMillis,
};

// ---------- encoding ----------

fn backoff(b: &Backoff) -> WireValue<'_> {
    let mut m = WireMap::default();
    m.push("type", WireValue::text(b.strategy.as_str()));
    m.push("delay", b.delay.map(WireValue::millis));
    m.push("jitter", b.jitter.map(WireValue::Float));
    WireValue::Map(m)
}

fn keep_jobs(k: &KeepJobs) -> WireValue<'static> {
    match k {
        KeepJobs::RemoveAll => WireValue::Bool(true),
        KeepJobs::KeepAll => WireValue::Bool(false),
        KeepJobs::Number(n) => WireValue::uint(*n),
        KeepJobs::Policy { age, count, limit } => {
            let mut m = WireMap::default();
            m.push("age", age.map(WireValue::seconds));
            m.push("count", count.map(WireValue::uint));
            m.push("limit", limit.map(WireValue::uint));
            WireValue::Map(m)
        }
    }
}

fn dedup(d: &Deduplication) -> WireValue<'_> {
    let mut m = WireMap::default();
    m.push("id", WireValue::text(&d.id));
    m.push("ttl", d.ttl.map(WireValue::millis));
    m.push("extend", d.extend.map(WireValue::Bool));
    m.push("replace", d.replace.map(WireValue::Bool));
    m.push("reschedule", d.reschedule.map(WireValue::Bool));
    m.push(
        "keepLastIfActive",
        d.keep_last_if_active.map(WireValue::Bool),
    );
    WireValue::Map(m)
}

fn repeat<'a>(r: &'a RepeatOptions, order: Option<&KeyOrder>) -> WireValue<'a> {
    let mut m = WireMap::default();
    m.push("pattern", r.pattern.as_deref().map(WireValue::text));
    m.push("every", r.every.map(WireValue::millis));
    m.push("limit", r.limit.map(WireValue::uint));
    m.push("tz", r.tz.as_deref().map(WireValue::text));
    m.push("key", r.key.as_deref().map(WireValue::text));
    m.push("immediately", r.immediately.map(WireValue::Bool));
    let millis = |at: Option<UnixMillis>| at.map(|at| WireValue::uint(at.get()));
    m.push("prevMillis", millis(r.prev_at()));
    m.push("offset", r.offset.map(WireValue::millis));
    m.push("count", r.count.map(WireValue::uint));
    m.push("startDate", millis(r.start_at()));
    m.push("endDate", millis(r.end_at()));
    for (k, v) in &r.extra {
        m.push(k.as_str(), WireValue::from(v));
    }
    if let Some(order) = order.filter(|o| !o.is_empty()) {
        // A listed key without a value is one Node.js's scheduler set to nothing: `offset` to
        // null, the dates to undefined (`getNextJobOpts`). Both still take their place.
        for key in order.keys() {
            let unset = REPEAT_KEYS.iter().find(|k| **k == key);
            if let Some(key) = unset.filter(|k| !m.0.iter().any(|(have, _)| have == *k)) {
                let nothing = if *key == "offset" {
                    WireValue::Null
                } else {
                    WireValue::Undefined
                };
                m.push(*key, nothing);
            }
        }
        reorder(&mut m, order, |k| k);
    }
    WireValue::Map(m)
}

/// The name a stored top-level key has in a [`KeyOrder`]: its long name, `telemetry` for the
/// flattened `tm`/`omc`.
fn order_name(key: &str) -> &str {
    if key == keys::TELEMETRY_METADATA || key == keys::TELEMETRY_OMIT_CONTEXT {
        return keys::TELEMETRY;
    }
    keys::COMPRESSIBLE
        .iter()
        .find(|c| c.short == key)
        .map_or(key, |c| c.long)
}

/// Puts the entries of `map` in `order` (a stable sort: `tm` stays before `omc`), unlisted
/// ones last in the order they were written, and nested typed objects in their own order.
fn reorder(map: &mut WireMap<'_>, order: &KeyOrder, name: fn(&str) -> &str) {
    map.0
        .sort_by_key(|(k, _)| order.position(name(k)).unwrap_or(usize::MAX));
    for (k, v) in &mut map.0 {
        let child = order.child(name(k)).filter(|c| !c.is_empty());
        if let (WireValue::Map(nested), Some(child)) = (v, child) {
            reorder(nested, child, |k| k);
        }
    }
}

/// The names of the options set in `o`, in the order Rust writes options it did not read
/// (long names, as [`KeyOrder`] lists them).
fn canonical_order(o: &JobOptions) -> KeyOrder {
    let fixed = JobOptions {
        key_order: KeyOrder::default(),
        ..o.clone()
    };
    to_wire(&fixed, KeyStyle::Long, ParentAt::InOrder)
        .0
        .iter()
        .map(|(k, _)| k.as_ref())
        .collect()
}

/// The keys set in `r`, in the order Rust writes them when no order is known.
fn canonical_repeat_order(r: &RepeatOptions) -> KeyOrder {
    match repeat(r, None) {
        WireValue::Map(m) => m.0.iter().map(|(k, _)| k.as_ref()).collect(),
        _ => KeyOrder::default(),
    }
}

/// Every key of `o`, in the order [`to_wire`] writes them: its [`KeyOrder`], then the keys it
/// does not list in the fixed order.
pub(crate) fn written_order(o: &JobOptions) -> KeyOrder {
    o.key_order.completed_by(&canonical_order(o))
}

/// Every key of `r`, in the order it is written: its [`KeyOrder`], then the keys it does not
/// list in the fixed order.
pub(crate) fn written_repeat_order(r: &RepeatOptions) -> KeyOrder {
    r.key_order.completed_by(&canonical_repeat_order(r))
}

/// Writes the options map in order, putting an option that was read but could not be typed
/// (kept raw in `extra`) back in its own slot, so that options passed through Rust keep their
/// order and therefore their bytes.
struct Writer<'a> {
    map: WireMap<'a>,
    style: KeyStyle,
    extra: &'a BTreeMap<String, Value>,
    placed: Vec<&'a str>,
}

impl<'a> Writer<'a> {
    fn put(&mut self, key: &'static str, value: Option<WireValue<'a>>) {
        self.put_any(key, &[key], value);
    }

    fn put_compressible(&mut self, c: keys::Compressible, value: Option<WireValue<'a>>) {
        self.put_any(c.name(self.style), &[c.short, c.long], value);
    }

    fn put_any(&mut self, key: &'static str, spellings: &[&str], value: Option<WireValue<'a>>) {
        if let Some(value) = value {
            self.map.push(key, value);
            // A typed value wins over a raw one stored under either spelling.
            self.placed.extend(
                spellings
                    .iter()
                    .filter_map(|s| self.extra.get_key_value(*s))
                    .map(|(k, _)| k.as_str()),
            );
            return;
        }
        let raw = spellings.iter().find_map(|s| self.extra.get_key_value(*s));
        if let Some((stored_key, raw)) = raw {
            self.map.push(key, WireValue::from(raw));
            self.placed.push(stored_key.as_str());
        }
    }

    /// Appends the raw options not placed yet, except those spelled as in `held` (placed
    /// after them by the caller).
    fn put_unplaced(&mut self, held: &[&str]) {
        for (k, v) in self.extra {
            if !self.placed.contains(&k.as_str()) && !held.contains(&k.as_str()) {
                self.map.push(k.as_str(), WireValue::from(v));
            }
        }
    }
}

/// Where `parent` goes in the options map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParentAt {
    /// In field order, as `Queue.add` passes a user's options.
    InOrder,
    /// After every other option: Node's `FlowProducer` builds a node's options as
    /// `{...queueDefaults, ...opts, parent}`, and the scripts keep that order into the stored
    /// JSON.
    Last,
}

fn parent(o: &JobOptions) -> Option<WireValue<'_>> {
    o.parent.as_ref().map(|p| {
        let mut pm = WireMap::default();
        pm.push("id", WireValue::text(&p.id));
        pm.push("queue", WireValue::text(&p.queue));
        WireValue::Map(pm)
    })
}

/// The stored map, keys in the order Node.js writes them for options given in field order:
/// `attempts` first (the `Job` constructor puts its default there), then the rest.
pub(crate) fn to_wire(o: &JobOptions, style: KeyStyle, parent_at: ParentAt) -> WireMap<'_> {
    let flag = |b: Option<bool>| b.map(WireValue::Bool);
    let mut w = Writer {
        map: WireMap::default(),
        style,
        extra: &o.extra,
        placed: Vec::new(),
    };
    w.put("attempts", o.attempts.map(WireValue::uint));
    w.put(
        "jobId",
        o.job_id.as_ref().map(|id| WireValue::text(id.as_str())),
    );
    w.put("timestamp", o.timestamp.map(WireValue::uint));
    w.put("priority", o.priority.map(WireValue::uint));
    w.put("delay", o.delay.map(WireValue::millis));
    w.put("backoff", o.backoff.as_ref().map(backoff));
    w.put("lifo", flag(o.lifo));
    w.put(
        "removeOnComplete",
        o.remove_on_complete.as_ref().map(keep_jobs),
    );
    w.put("removeOnFail", o.remove_on_fail.as_ref().map(keep_jobs));
    w.put_compressible(keys::KEEP_LOGS, o.keep_logs.map(WireValue::uint));
    w.put("stackTraceLimit", o.stack_trace_limit.map(WireValue::uint));
    w.put("sizeLimit", o.size_limit.map(WireValue::uint));
    if parent_at == ParentAt::InOrder {
        w.put("parent", parent(o));
    }
    w.put_compressible(keys::FAIL_PARENT, flag(o.fail_parent_on_failure));
    w.put_compressible(keys::CONTINUE_PARENT, flag(o.continue_parent_on_failure));
    w.put_compressible(
        keys::IGNORE_DEPENDENCY,
        flag(o.ignore_dependency_on_failure),
    );
    w.put_compressible(
        keys::REMOVE_DEPENDENCY,
        flag(o.remove_dependency_on_failure),
    );
    w.put_compressible(keys::DEDUPLICATION, o.deduplication.as_ref().map(dedup));
    let telemetry = o.telemetry.as_ref();
    let metadata = telemetry
        .and_then(|t| t.metadata.as_deref())
        .map(WireValue::text);
    let omit = flag(telemetry.and_then(|t| t.omit_context));
    match style {
        KeyStyle::Short => {
            w.put(keys::TELEMETRY_METADATA, metadata);
            w.put(keys::TELEMETRY_OMIT_CONTEXT, omit);
        }
        KeyStyle::Long => {
            // `tm: false` kept raw (Node's `metadata: false` of an omitted context) goes
            // inside, as `metadata`.
            let raw_false = metadata.is_none()
                && w.extra.get(keys::TELEMETRY_METADATA) == Some(&Value::Bool(false));
            if raw_false {
                w.placed.push(keys::TELEMETRY_METADATA);
            }
            let metadata = metadata.or(raw_false.then_some(WireValue::Bool(false)));
            let nested = telemetry.map(|_| {
                let mut tm = WireMap::default();
                tm.push("metadata", metadata);
                tm.push("omitContext", omit);
                WireValue::Map(tm)
            });
            w.put(keys::TELEMETRY, nested);
        }
    }
    w.put(
        "repeat",
        o.repeat.as_ref().map(|r| {
            let given = o.key_order.child("repeat").filter(|c| !c.is_empty());
            repeat(r, given.or(Some(&r.key_order)))
        }),
    );
    w.put("prevMillis", o.prev_millis.map(WireValue::uint));
    match parent_at {
        ParentAt::InOrder => w.put_unplaced(&[]),
        ParentAt::Last => {
            w.put_unplaced(&["parent"]);
            w.put("parent", parent(o));
        }
    }
    if !o.key_order.is_empty() {
        reorder(&mut w.map, &o.key_order, order_name);
    }
    w.map
}

// ---------- decoding ----------

/// Options read from the datastore: every option that could be read, plus the ones that could
/// not. One bad option never hides the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecodedOptions {
    /// The options that were read; unreadable and unknown ones are in `options.extra`.
    pub options: JobOptions,
    /// The options that were present but malformed.
    pub invalid: Vec<InvalidOption>,
}

type Read<T> = Result<T, String>;

fn describe(v: &Value) -> String {
    let mut s = v.to_string();
    if s.len() > 60 {
        let cut = (0..=60).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
        s.truncate(cut);
        s.push('…');
    }
    s
}

fn read_f64(v: &Value) -> Read<f64> {
    match v.as_f64() {
        Some(f) if f.is_finite() => Ok(f),
        _ => Err(format!("expected a number, found {}", describe(v))),
    }
}

fn read_u64(v: &Value) -> Read<u64> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    let f = read_f64(v)?;
    // cjson may store large integers as floats (`1.2345678901235e+15`); accept whole ones.
    if f >= 0.0 && f.fract() == 0.0 && f < 18_446_744_073_709_551_616.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        return Ok(f as u64);
    }
    Err(format!(
        "expected a non-negative integer, found {}",
        describe(v)
    ))
}

fn read_u32(v: &Value) -> Read<u32> {
    let n = read_u64(v)?;
    u32::try_from(n).map_err(|_| format!("expected an integer up to {}, found {n}", u32::MAX))
}

/// `n` whole units as a duration, `None` past `Duration::MAX`.
fn whole_units(n: u64, unit_nanos: u64) -> Option<Duration> {
    let nanos = u128::from(n) * u128::from(unit_nanos);
    let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
    let sub = u32::try_from(nanos % 1_000_000_000).ok()?;
    Some(Duration::new(secs, sub))
}

/// The inverse of [`in_units`]: whole numbers exactly; otherwise the whole part exactly and the
/// fraction to the nearest nanosecond.
fn read_units(v: &Value, unit_nanos: u64, unit: &str) -> Read<Duration> {
    let too_long = || format!("{} {unit} is too long", describe(v));
    if let Some(n) = v.as_u64() {
        return whole_units(n, unit_nanos).ok_or_else(too_long);
    }
    let x = read_f64(v)?;
    if x < 0.0 {
        return Err(format!(
            "expected a non-negative number of {unit}, found {}",
            describe(v)
        ));
    }
    if x >= 18_446_744_073_709_551_616.0 {
        return Err(too_long());
    }
    let whole = x.trunc();
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let (whole, frac_nanos) = (
        whole as u64,
        ((x - whole) * unit_nanos as f64).round() as u64,
    );
    whole_units(whole, unit_nanos)
        .and_then(|d| d.checked_add(Duration::from_nanos(frac_nanos)))
        .ok_or_else(too_long)
}

fn read_millis(v: &Value) -> Read<Duration> {
    read_units(v, 1_000_000, "milliseconds")
}

fn read_seconds(v: &Value) -> Read<Duration> {
    read_units(v, 1_000_000_000, "seconds")
}

fn read_bool(v: &Value) -> Read<bool> {
    v.as_bool()
        .ok_or_else(|| format!("expected a boolean, found {}", describe(v)))
}

fn read_string(v: &Value) -> Read<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        // Ids written by other runtimes may be numbers; JavaScript would coerce them.
        Value::Number(n) => Ok(n.to_string()),
        other => Err(format!("expected a string, found {}", describe(other))),
    }
}

fn read_object(v: &Value) -> Read<&Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| format!("expected an object, found {}", describe(v)))
}

/// Reads an optional member of a nested object; `null` counts as absent.
fn member<T>(
    obj: &Map<String, Value>,
    key: &str,
    read: impl Fn(&Value) -> Read<T>,
) -> Read<Option<T>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => read(v).map(Some).map_err(|e| format!("{key}: {e}")),
    }
}

/// Reads a member of a nested object that must be there (not absent, not `null`).
fn required<T>(obj: &Map<String, Value>, key: &str, read: impl Fn(&Value) -> Read<T>) -> Read<T> {
    member(obj, key, read)?.ok_or_else(|| format!("missing `{key}`"))
}

fn read_backoff(v: &Value) -> Read<Backoff> {
    if v.is_number() {
        // The bare-number form, which Node.js normalizes before storing; other writers may not.
        return Ok(Backoff::fixed(read_millis(v)?));
    }
    let obj = read_object(v)?;
    let kind = required(obj, "type", read_string)?;
    Ok(Backoff {
        strategy: BackoffStrategy::from_type(&kind),
        delay: member(obj, "delay", read_millis)?,
        jitter: member(obj, "jitter", read_f64)?,
    })
}

fn read_keep_jobs(v: &Value) -> Read<KeepJobs> {
    match v {
        Value::Bool(true) => Ok(KeepJobs::RemoveAll),
        Value::Bool(false) => Ok(KeepJobs::KeepAll),
        Value::Number(_) => read_u64(v).map(KeepJobs::Number),
        _ => {
            let obj = read_object(v)?;
            Ok(KeepJobs::Policy {
                age: member(obj, "age", read_seconds)?,
                count: member(obj, "count", read_u64)?,
                limit: member(obj, "limit", read_u64)?,
            })
        }
    }
}

fn read_parent(v: &Value) -> Read<ParentOptions> {
    let obj = read_object(v)?;
    Ok(ParentOptions {
        id: required(obj, "id", read_string)?,
        queue: required(obj, "queue", read_string)?,
    })
}

fn read_dedup(v: &Value) -> Read<Deduplication> {
    let obj = read_object(v)?;
    Ok(Deduplication {
        id: required(obj, "id", read_string)?,
        ttl: member(obj, "ttl", read_millis)?,
        extend: member(obj, "extend", read_bool)?,
        replace: member(obj, "replace", read_bool)?,
        reschedule: member(obj, "reschedule", read_bool)?,
        keep_last_if_active: member(obj, "keepLastIfActive", read_bool)?,
    })
}

fn read_telemetry(v: &Value) -> Read<Telemetry> {
    let obj = read_object(v)?;
    Ok(Telemetry {
        metadata: member(obj, "metadata", read_string)?,
        omit_context: member(obj, "omitContext", read_bool)?,
    })
}

const REPEAT_KEYS: [&str; 11] = [
    "pattern",
    "every",
    "limit",
    "tz",
    "key",
    "immediately",
    "prevMillis",
    "offset",
    "count",
    "startDate",
    "endDate",
];

// Fills the raw date fields: this is the store's shape, not a caller's.
#[allow(deprecated)]
fn read_repeat(v: &Value) -> Read<RepeatOptions> {
    let obj = read_object(v)?;
    Ok(RepeatOptions {
        pattern: member(obj, "pattern", read_string)?,
        every: member(obj, "every", read_millis)?,
        limit: member(obj, "limit", read_u64)?,
        tz: member(obj, "tz", read_string)?,
        key: member(obj, "key", read_string)?,
        immediately: member(obj, "immediately", read_bool)?,
        prev_millis: member(obj, "prevMillis", read_u64)?,
        offset: member(obj, "offset", read_millis)?,
        count: member(obj, "count", read_u64)?,
        start_date: member(obj, "startDate", read_u64)?,
        end_date: member(obj, "endDate", read_u64)?,
        extra: obj
            .iter()
            .filter(|(k, _)| !REPEAT_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        key_order: KeyOrder::of_object(v),
    })
}

/// Stores `read(value)` into `slot`, or records why not and keeps the raw value.
fn put<T>(
    out: &mut DecodedOptions,
    key: &str,
    value: &Value,
    read: impl Fn(&Value) -> Read<T>,
    slot: impl FnOnce(&mut JobOptions) -> &mut Option<T>,
) {
    if value.is_null() {
        return;
    }
    match read(value) {
        Ok(v) => *slot(&mut out.options) = Some(v),
        Err(reason) => {
            out.invalid.push(InvalidOption {
                key: key.to_owned(),
                reason,
            });
            // Under one spelling whatever the key style read: the writer puts it back under
            // the style it writes, so a raw option reads back the same from either store.
            out.options
                .extra
                .insert(long_name(key).to_owned(), value.clone());
        }
    }
}

/// The long name of a compressible option (`kl` is `keepLogs`); other keys as they are.
fn long_name(key: &str) -> &str {
    keys::COMPRESSIBLE
        .iter()
        .find(|c| c.short == key || c.long == key)
        .map_or(key, |c| c.long)
}

/// The entries of a stored object as `JSON.parse` and Node's short-key decoding leave them: a
/// key written twice, or an option under both spellings, keeps its first place and its last
/// value.
pub(crate) fn last_value_wins<K: AsRef<str>, V>(entries: Vec<(K, V)>) -> Vec<(K, V)> {
    let mut out: Vec<(K, V)> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let name = long_name(key.as_ref());
        match out.iter_mut().find(|(k, _)| long_name(k.as_ref()) == name) {
            Some(earlier) => *earlier = (key, value),
            None => out.push((key, value)),
        }
    }
    out
}

fn telemetry_slot(o: &mut JobOptions) -> &mut Telemetry {
    o.telemetry.get_or_insert_with(Telemetry::default)
}

/// Reads stored options written in either key style by any runtime.
pub(crate) fn from_map(map: &Map<String, Value>) -> DecodedOptions {
    let mut out = DecodedOptions::default();
    for (key, value) in last_value_wins(map.iter().collect()) {
        decode_entry(&mut out, key, value);
    }
    out
}

/// Notes where a stored option came, with its own keys' order when it is a typed object.
fn record_order(order: &mut KeyOrder, long: &str, value: &Value) {
    const NESTED: [&str; 7] = [
        "repeat",
        "backoff",
        "removeOnComplete",
        "removeOnFail",
        "deduplication",
        "parent",
        keys::TELEMETRY,
    ];
    let name = order_name(long);
    let child = if NESTED.contains(&name) {
        KeyOrder::of_object(value)
    } else {
        KeyOrder::default()
    };
    order.push(name, child);
}

/// Reads one stored option into `out`.
pub(crate) fn decode_entry(out: &mut DecodedOptions, k: &str, value: &Value) {
    let long = long_name(k);
    record_order(&mut out.options.key_order, long, value);
    match long {
        "attempts" => put(out, k, value, read_u32, |o| &mut o.attempts),
        "jobId" => put(
            out,
            k,
            value,
            |v| read_string(v).map(JobId::from),
            |o| &mut o.job_id,
        ),
        "timestamp" => put(out, k, value, read_u64, |o| &mut o.timestamp),
        "priority" => put(out, k, value, read_u32, |o| &mut o.priority),
        "delay" => put(out, k, value, read_millis, |o| &mut o.delay),
        "backoff" => put(out, k, value, read_backoff, |o| &mut o.backoff),
        "lifo" => put(out, k, value, read_bool, |o| &mut o.lifo),
        "removeOnComplete" => put(out, k, value, read_keep_jobs, |o| &mut o.remove_on_complete),
        "removeOnFail" => put(out, k, value, read_keep_jobs, |o| &mut o.remove_on_fail),
        "keepLogs" => put(out, k, value, read_u32, |o| &mut o.keep_logs),
        "stackTraceLimit" => put(out, k, value, read_u32, |o| &mut o.stack_trace_limit),
        "sizeLimit" => put(out, k, value, read_u64, |o| &mut o.size_limit),
        "parent" => put(out, k, value, read_parent, |o| &mut o.parent),
        "failParentOnFailure" => put(out, k, value, read_bool, |o| &mut o.fail_parent_on_failure),
        "continueParentOnFailure" => {
            put(out, k, value, read_bool, |o| {
                &mut o.continue_parent_on_failure
            });
        }
        "ignoreDependencyOnFailure" => {
            put(out, k, value, read_bool, |o| {
                &mut o.ignore_dependency_on_failure
            });
        }
        "removeDependencyOnFailure" => {
            put(out, k, value, read_bool, |o| {
                &mut o.remove_dependency_on_failure
            });
        }
        "deduplication" => put(out, k, value, read_dedup, |o| &mut o.deduplication),
        keys::TELEMETRY_METADATA => {
            put(out, k, value, read_string, |o| {
                &mut telemetry_slot(o).metadata
            });
        }
        keys::TELEMETRY_OMIT_CONTEXT => {
            put(out, k, value, read_bool, |o| {
                &mut telemetry_slot(o).omit_context
            });
        }
        keys::TELEMETRY => put(out, k, value, read_telemetry, |o| &mut o.telemetry),
        "repeat" => put(out, k, value, read_repeat, |o| &mut o.repeat),
        "prevMillis" => put(out, k, value, read_u64, |o| &mut o.prev_millis),
        _ => {
            out.options.extra.insert(k.to_owned(), value.clone());
        }
    }
}
