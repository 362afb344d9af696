//! Property tests of the job-options codec (`bullmq_core::codec`), the job hash
//! (`Job::to_hash` / `Job::from_hash`) and `Backoff::delay_for_attempt`.
//!
//! What the generators deliberately leave out, and why (each is covered by a dedicated test
//! below that shows the actual behaviour):
//!
//! - Numbers above 2^53 in `u64` options: options travel as JavaScript numbers, and msgpack
//!   writes anything past 2^32 as a float64, so only JS-safe integers can survive.
//! - Fractional durations past 2^53 nanoseconds (`n + 0.5 ms` with `n >= 2^33`, or a
//!   `KeepJobs` age of `n + 0.5 s` with `n` in the billions): the codec converts through f64
//!   nanoseconds, which can no longer hold the fraction (see
//!   `fractional_durations_past_2_pow_53_nanoseconds_round_trip`, ignored).
//! - Arbitrary `f64` jitters: `serde_json` is built without `float_roundtrip`, so about one
//!   random double in ten comes back one ulp off from JSON (see
//!   `arbitrary_jitter_round_trips_through_json`, ignored). The main generator uses
//!   `k / 1000`, which parses exactly.
//! - Integers in `extra` outside `[-2^31, 2^32)`: msgpack carries them as float64 and the
//!   decoder keeps them as JSON floats (see `large_integers_in_extra_come_back_from_msgpack_as_integers`,
//!   ignored); whole floats in `extra` are likewise excluded because JSON and msgpack both turn
//!   `2.0` into `2`, which `serde_json::Value` does not consider equal.
//! - `Telemetry` with neither field set: the short style has nowhere to put an empty
//!   telemetry object (see `empty_telemetry_is_dropped_by_the_short_style`).
//! - `BackoffStrategy::Custom("fixed")` / `Custom("exponential")`: they decode as the built-in
//!   strategies (see `custom_backoff_named_like_a_builtin_decodes_as_the_builtin`).
//!
//! Empty arrays and objects in `extra` are generated: in Rust they round-trip both ways. (cjson
//! in Redis stores an empty array as `{}`; that happens outside this crate.)

#![allow(clippy::unwrap_used, clippy::cast_precision_loss)]

use std::collections::BTreeMap;
use std::time::Duration;

use bullmq_core::codec::{self, KeyStyle};
use bullmq_core::options::{
    Backoff, BackoffStrategy, Deduplication, KeepJobs, ParentOptions, Telemetry,
};
use bullmq_core::scheduling::RepeatOptions;
use bullmq_core::{Job, JobId, JobOptions};
use proptest::prelude::*;
use serde_json::{Value, json};

/// 2^53, the largest integer every runtime reads back exactly.
const MAX_SAFE: u64 = 1 << 53;

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

fn safe_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        1 => Just(0u64),
        1 => Just(MAX_SAFE),
        1 => Just(u64::from(u32::MAX)),
        1 => Just(u64::from(u32::MAX) + 1),
        6 => 0..=MAX_SAFE,
        4 => 0u64..1000,
    ]
}

fn any_u32() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(u32::MAX), 0u32..200, any::<u32>()]
}

/// Whole milliseconds up to 2^53, plus a few exactly representable fractions (`.25`, `.5`,
/// `.75` ms) on values below 2^32 ms.
fn millis_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        6 => safe_u64().prop_map(Duration::from_millis),
        1 => (0u64..=(1 << 32), 1u64..4)
            .prop_map(|(n, q)| Duration::from_millis(n) + Duration::from_micros(250 * q)),
        1 => (0u64..10_000).prop_map(|n| Duration::from_millis(n) + Duration::from_micros(500)),
    ]
}

/// `KeepJobs` ages are stored in seconds: whole up to 2^53, or `n + 0.5` s.
fn seconds_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        3 => safe_u64().prop_map(Duration::from_secs),
        // Below 2^53 ns; see `fractional_durations_past_2_pow_53_nanoseconds_round_trip`.
        1 => (0u64..(1 << 23)).prop_map(|n| Duration::from_secs(n) + Duration::from_millis(500)),
    ]
}

/// A jitter that JSON carries exactly (`k / 1000`).
fn jitter() -> impl Strategy<Value = f64> {
    (0u32..=1000).prop_map(|k| f64::from(k) / 1000.0)
}

fn backoff_strategy() -> impl Strategy<Value = BackoffStrategy> {
    prop_oneof![
        Just(BackoffStrategy::Fixed),
        Just(BackoffStrategy::Exponential),
        "[a-zA-Z_-]{0,12}"
            .prop_filter("not a built-in name", |s| s != "fixed"
                && s != "exponential")
            .prop_map(BackoffStrategy::Custom),
    ]
}

fn backoff() -> BoxedStrategy<Backoff> {
    (
        backoff_strategy(),
        proptest::option::of(millis_duration()),
        proptest::option::of(jitter()),
    )
        .prop_map(|(strategy, delay, jitter)| Backoff {
            strategy,
            delay,
            jitter,
        })
        .boxed()
}

fn keep_jobs() -> BoxedStrategy<KeepJobs> {
    prop_oneof![
        Just(KeepJobs::RemoveAll),
        Just(KeepJobs::KeepAll),
        safe_u64().prop_map(KeepJobs::Number),
        (
            proptest::option::of(seconds_duration()),
            proptest::option::of(safe_u64()),
            proptest::option::of(safe_u64()),
        )
            .prop_map(|(age, count, limit)| KeepJobs::Policy { age, count, limit }),
    ]
    .boxed()
}

fn dedup() -> BoxedStrategy<Deduplication> {
    (
        ".{0,12}",
        proptest::option::of(millis_duration()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(
            |(id, ttl, extend, replace, reschedule, keep_last_if_active)| Deduplication {
                id,
                ttl,
                extend,
                replace,
                reschedule,
                keep_last_if_active,
            },
        )
        .boxed()
}

/// Telemetry with at least one field set.
fn telemetry() -> BoxedStrategy<Telemetry> {
    prop_oneof![
        ".{0,20}".prop_map(|m| Telemetry {
            metadata: Some(m),
            omit_context: None,
        }),
        any::<bool>().prop_map(|b| Telemetry {
            metadata: None,
            omit_context: Some(b),
        }),
        (".{0,20}", any::<bool>()).prop_map(|(m, b)| Telemetry {
            metadata: Some(m),
            omit_context: Some(b),
        }),
    ]
    .boxed()
}

fn parent() -> impl Strategy<Value = ParentOptions> {
    (".{0,10}", ".{0,16}").prop_map(|(id, queue)| ParentOptions { id, queue })
}

/// A JSON leaf that every path carries exactly: integers in msgpackr's integer range,
/// non-whole quarter fractions, strings, booleans, null.
fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-(1i64 << 31)..(1i64 << 32)).prop_map(Value::from),
        (-1_000_000i32..1_000_000, 1u8..4)
            .prop_map(|(n, q)| json!(f64::from(n) + f64::from(q) * 0.25)),
        ".{0,12}".prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Unknown keys that cannot collide with an option name or a short key (all known names are
/// camelCase or two to four lower-case letters without `_`).
fn extra_map() -> impl Strategy<Value = BTreeMap<String, Value>> {
    prop::collection::btree_map(
        "(x_|ext_|remove_on_|Zz)[a-zA-Z0-9_]{0,8}",
        json_value(),
        0..4,
    )
}

fn repeat() -> BoxedStrategy<RepeatOptions> {
    (
        (
            proptest::option::of(".{0,16}"),
            proptest::option::of(millis_duration()),
            proptest::option::of(safe_u64()),
            proptest::option::of(any::<bool>()),
            proptest::option::of(safe_u64()),
            proptest::option::of(millis_duration()),
        ),
        (
            proptest::option::of(safe_u64()),
            proptest::option::of(safe_u64()),
            proptest::option::of("[A-Za-z/_]{0,16}"),
            proptest::option::of(safe_u64()),
            proptest::option::of(".{0,10}"),
            extra_map(),
        ),
    )
        .prop_map(
            |(
                (pattern, every, limit, immediately, count, offset),
                (start_date, end_date, tz, prev_millis, key, extra),
            )| {
                // Every field, the deprecated raw dates included.
                #[allow(deprecated)]
                let repeat = RepeatOptions {
                    pattern,
                    every,
                    limit,
                    immediately,
                    count,
                    offset,
                    start_date,
                    end_date,
                    tz,
                    prev_millis,
                    key,
                    extra,
                    ..RepeatOptions::default()
                };
                repeat
            },
        )
        .boxed()
}

fn job_options() -> BoxedStrategy<JobOptions> {
    use proptest::option::of;
    (
        (
            of(any_u32()),
            of(".{0,12}".prop_map(JobId::from)),
            of(safe_u64()),
            of(0u32..=2_097_151),
            of(millis_duration()),
            of(backoff()),
            of(any::<bool>()),
            of(keep_jobs()),
            of(keep_jobs()),
        )
            .boxed(),
        (
            of(any_u32()),
            of(any_u32()),
            of(safe_u64()),
            of(parent()),
            of(any::<bool>()),
            of(any::<bool>()),
            of(any::<bool>()),
            of(any::<bool>()),
        )
            .boxed(),
        (
            of(dedup()),
            of(telemetry()),
            of(repeat()),
            of(safe_u64()),
            extra_map(),
        )
            .boxed(),
    )
        .prop_map(
            |(
                (attempts, job_id, timestamp, priority, delay, backoff, lifo, roc, rof),
                (keep_logs, stl, size_limit, parent, fpof, cpof, idof, rdof),
                (deduplication, telemetry, repeat, prev_millis, extra),
            )| JobOptions {
                attempts,
                job_id,
                timestamp,
                priority,
                delay,
                backoff,
                lifo,
                remove_on_complete: roc,
                remove_on_fail: rof,
                keep_logs,
                stack_trace_limit: stl,
                size_limit,
                parent,
                fail_parent_on_failure: fpof,
                continue_parent_on_failure: cpof,
                ignore_dependency_on_failure: idof,
                remove_dependency_on_failure: rdof,
                deduplication,
                telemetry,
                repeat,
                prev_millis,
                extra,
                key_order: Default::default(),
            },
        )
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// A msgpack walker independent of the library: records every map header and every number
// ---------------------------------------------------------------------------------------------

#[derive(Default, Debug)]
struct Packed {
    map_markers: Vec<u8>,
    /// (marker, value) of every msgpack integer.
    ints: Vec<(u8, i128)>,
    /// (marker, value) of every msgpack float.
    floats: Vec<(u8, f64)>,
}

fn walk(bytes: &[u8]) -> Result<Packed, String> {
    fn take<'a>(b: &'a [u8], i: &mut usize, n: usize) -> Result<&'a [u8], String> {
        let s = b
            .get(*i..*i + n)
            .ok_or_else(|| format!("truncated at {i}"))?;
        *i += n;
        Ok(s)
    }
    fn be(b: &[u8], i: &mut usize, n: usize) -> Result<u64, String> {
        Ok(take(b, i, n)?
            .iter()
            .fold(0u64, |acc, x| (acc << 8) | u64::from(*x)))
    }
    fn value(b: &[u8], i: &mut usize, out: &mut Packed) -> Result<(), String> {
        let m = take(b, i, 1)?[0];
        let (maps, arrays, skip): (u64, u64, u64) = match m {
            0x00..=0x7f => {
                out.ints.push((m, i128::from(m)));
                (0, 0, 0)
            }
            0x80..=0x8f => {
                out.map_markers.push(m);
                (u64::from(m & 0x0f), 0, 0)
            }
            0x90..=0x9f => (0, u64::from(m & 0x0f), 0),
            0xa0..=0xbf => (0, 0, u64::from(m & 0x1f)),
            0xc0 | 0xc2 | 0xc3 => (0, 0, 0),
            0xc4 => (0, 0, be(b, i, 1)?),
            0xc5 => (0, 0, be(b, i, 2)?),
            0xc6 => (0, 0, be(b, i, 4)?),
            0xca => {
                let bits = u32::try_from(be(b, i, 4)?).map_err(|e| e.to_string())?;
                out.floats.push((m, f64::from(f32::from_bits(bits))));
                (0, 0, 0)
            }
            0xcb => {
                out.floats.push((m, f64::from_bits(be(b, i, 8)?)));
                (0, 0, 0)
            }
            0xcc..=0xcf => {
                let n = be(b, i, 1 << (m - 0xcc))?;
                out.ints.push((m, i128::from(n)));
                (0, 0, 0)
            }
            0xd0..=0xd3 => {
                let width = 1usize << (m - 0xd0);
                let raw = be(b, i, width)?;
                let shift = 64 - 8 * width;
                #[allow(clippy::cast_possible_wrap)]
                let n = ((raw << shift) as i64) >> shift;
                out.ints.push((m, i128::from(n)));
                (0, 0, 0)
            }
            0xd9 => (0, 0, be(b, i, 1)?),
            0xda => (0, 0, be(b, i, 2)?),
            0xdb => (0, 0, be(b, i, 4)?),
            0xdc => (0, be(b, i, 2)?, 0),
            0xdd => (0, be(b, i, 4)?, 0),
            0xde => {
                out.map_markers.push(m);
                (be(b, i, 2)?, 0, 0)
            }
            0xdf => {
                out.map_markers.push(m);
                (be(b, i, 4)?, 0, 0)
            }
            0xe0..=0xff => {
                out.ints.push((m, i128::from(i8::from_be_bytes([m]))));
                (0, 0, 0)
            }
            other => return Err(format!("unexpected marker {other:#04x} at {}", *i - 1)),
        };
        take(b, i, usize::try_from(skip).map_err(|e| e.to_string())?)?;
        for _ in 0..(2 * maps + arrays) {
            value(b, i, out)?;
        }
        Ok(())
    }
    let mut out = Packed::default();
    let mut i = 0;
    value(bytes, &mut i, &mut out)?;
    if i != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - i));
    }
    Ok(out)
}

/// The marker msgpackr (`useRecords: false`) picks for an integer it writes as an integer.
fn msgpackr_int_marker(n: i128) -> u8 {
    match n {
        // fixint: the marker is the value's own byte
        -32..=0x7f => i8::try_from(n).unwrap().to_be_bytes()[0],
        0x80..=0xff => 0xcc,
        0x100..=0xffff => 0xcd,
        0x1_0000..=0xffff_ffff => 0xce,
        -0x80..=-33 => 0xd0,
        -0x8000..=-0x81 => 0xd1,
        _ => 0xd2,
    }
}

fn in_msgpackr_int_range(x: f64) -> bool {
    x.fract() == 0.0 && (-2_147_483_648.0..4_294_967_296.0).contains(&x)
}

fn assert_packed_like_msgpackr(bytes: &[u8]) -> Result<(), TestCaseError> {
    let packed = walk(bytes).map_err(TestCaseError::fail)?;
    prop_assert!(
        packed.map_markers.iter().all(|m| *m == 0xde),
        "map headers {:02x?}",
        packed.map_markers
    );
    for (marker, n) in &packed.ints {
        prop_assert!(
            (-(1i128 << 31)..(1i128 << 32)).contains(n),
            "integer {n} outside msgpackr's integer range"
        );
        prop_assert_eq!(*marker, msgpackr_int_marker(*n), "marker of {}", n);
    }
    for (marker, x) in &packed.floats {
        prop_assert_eq!(*marker, 0xcb, "msgpackr writes float64 only");
        prop_assert!(
            !in_msgpackr_int_range(*x),
            "{x} would have been written as an integer by msgpackr"
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Option round trips
// ---------------------------------------------------------------------------------------------

proptest! {
    #[test]
    fn msgpack_round_trip(opts in job_options()) {
        let bytes = codec::options_to_msgpack(&opts).unwrap();
        let back = codec::options_from_msgpack(&bytes).unwrap();
        prop_assert!(back.invalid.is_empty(), "invalid: {:?}", back.invalid);
        prop_assert_eq!(back.options, opts);
    }

    #[test]
    fn msgpack_is_shaped_like_msgpackr(opts in job_options()) {
        let bytes = codec::options_to_msgpack(&opts).unwrap();
        assert_packed_like_msgpackr(&bytes)?;
        let decoded = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
        let rmpv::Value::Map(entries) = decoded else {
            return Err(TestCaseError::fail("top level is not a map"));
        };
        // The same entries as the short-style JSON, in the same order.
        let json = codec::options_to_value(&opts, KeyStyle::Short);
        let json_keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        let packed_keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str().unwrap()).collect();
        prop_assert_eq!(packed_keys, json_keys);
    }

    #[test]
    fn json_round_trip_both_styles(opts in job_options()) {
        for style in [KeyStyle::Short, KeyStyle::Long] {
            let json = codec::options_to_json(&opts, style);
            let back = codec::options_from_json(&json).unwrap();
            prop_assert!(back.invalid.is_empty(), "{style:?}: invalid: {:?}", back.invalid);
            prop_assert_eq!(&back.options, &opts, "{:?}", style);
        }
    }

    #[test]
    fn value_round_trip_both_styles(opts in job_options()) {
        for style in [KeyStyle::Short, KeyStyle::Long] {
            let value = codec::options_to_value(&opts, style);
            // The value and the JSON text are the same document.
            prop_assert_eq!(&value, &serde_json::from_str::<Value>(&codec::options_to_json(&opts, style)).unwrap());
            let back = codec::options_from_value(&value).unwrap();
            prop_assert!(back.invalid.is_empty(), "invalid: {:?}", back.invalid);
            prop_assert_eq!(&back.options, &opts);
        }
    }

    #[test]
    fn short_style_uses_only_short_names(opts in job_options()) {
        let short = codec::options_to_value(&opts, KeyStyle::Short);
        let long = codec::options_to_value(&opts, KeyStyle::Long);
        let short_keys: Vec<&String> = short.as_object().unwrap().keys().collect();
        let long_keys: Vec<&String> = long.as_object().unwrap().keys().collect();
        for k in ["deduplication", "failParentOnFailure", "continueParentOnFailure",
                  "ignoreDependencyOnFailure", "keepLogs", "removeDependencyOnFailure", "telemetry"] {
            prop_assert!(!short_keys.iter().any(|s| *s == k), "short style has {}", k);
        }
        for k in ["de", "fpof", "cpof", "idof", "kl", "rdof", "tm", "omc"] {
            prop_assert!(!long_keys.iter().any(|s| *s == k), "long style has {}", k);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The normalizations the generators avoid, shown
// ---------------------------------------------------------------------------------------------

#[test]
fn empty_telemetry_is_dropped_by_the_short_style() {
    let opts = JobOptions::new().telemetry(Telemetry::default());
    assert_eq!(codec::options_to_json(&opts, KeyStyle::Short), "{}");
    let short = codec::options_from_json(&codec::options_to_json(&opts, KeyStyle::Short)).unwrap();
    assert_eq!(short.options.telemetry, None);
    assert_eq!(
        codec::options_to_json(&opts, KeyStyle::Long),
        r#"{"telemetry":{}}"#
    );
    let long = codec::options_from_json(&codec::options_to_json(&opts, KeyStyle::Long)).unwrap();
    assert_eq!(long.options.telemetry, Some(Telemetry::default()));
}

#[test]
fn custom_backoff_named_like_a_builtin_decodes_as_the_builtin() {
    let opts = JobOptions::new().backoff(Backoff::custom("fixed").delay(Duration::from_secs(1)));
    let json = codec::options_to_json(&opts, KeyStyle::Short);
    assert_eq!(json, r#"{"backoff":{"type":"fixed","delay":1000}}"#);
    let back = codec::options_from_json(&json).unwrap().options;
    assert_eq!(back.backoff.unwrap().strategy, BackoffStrategy::Fixed);
}

#[test]
fn whole_floats_in_extra_are_written_as_integers() {
    let mut opts = JobOptions::new();
    opts.extra.insert("x_f".into(), json!(2.0));
    assert_eq!(
        codec::options_to_json(&opts, KeyStyle::Short),
        r#"{"x_f":2}"#
    );
    let bytes = codec::options_to_msgpack(&opts).unwrap();
    assert_eq!(bytes, [0xde, 0x00, 0x01, 0xa3, b'x', b'_', b'f', 0x02]);
    let back = codec::options_from_msgpack(&bytes).unwrap().options;
    assert_eq!(back.extra["x_f"], json!(2));
}

#[test]
fn integers_past_2_pow_53_lose_precision_in_msgpack_but_not_in_json() {
    let opts = JobOptions::new()
        .created_at(u64::MAX)
        .size_limit(MAX_SAFE + 1);
    let json = codec::options_to_json(&opts, KeyStyle::Short);
    assert_eq!(
        json,
        r#"{"timestamp":18446744073709551615,"sizeLimit":9007199254740993}"#
    );
    assert_eq!(codec::options_from_json(&json).unwrap().options, opts);
    let bytes = codec::options_to_msgpack(&opts).unwrap();
    let back = codec::options_from_msgpack(&bytes).unwrap();
    // float64 cannot hold 2^53 + 1; 2^64 - 1 rounds up to 2^64, which is out of u64 range.
    assert_eq!(back.options.size_limit, Some(MAX_SAFE));
    assert_eq!(back.options.timestamp, None);
    assert_eq!(back.invalid.len(), 1);
    assert_eq!(back.invalid[0].key, "timestamp");
}

#[test]
fn msgpack_of_node_defaults_matches_msgpackr_bytes() {
    // msgpackr.pack({attempts: 0, delay: 500, kl: 10, de: {id: "d1"}}) with useRecords: false.
    let opts = JobOptions::new()
        .delay(Duration::from_millis(500))
        .keep_logs(10)
        .deduplication(Deduplication::new("d1"))
        .with_node_defaults();
    let expected: Vec<u8> = [
        &[0xde, 0x00, 0x04][..],
        &[0xa8],
        b"attempts",
        &[0x00],
        &[0xa5],
        b"delay",
        &[0xcd, 0x01, 0xf4],
        &[0xa2],
        b"kl",
        &[0x0a],
        &[0xa2],
        b"de",
        &[0xde, 0x00, 0x01, 0xa2],
        b"id",
        &[0xa2],
        b"d1",
    ]
    .concat();
    assert_eq!(codec::options_to_msgpack(&opts).unwrap(), expected);
}

#[test]
fn msgpack_numbers_follow_msgpackr_at_the_range_edges() {
    let mut opts = JobOptions::new();
    for (k, v) in [
        ("x_a", json!(-2_147_483_648i64)),
        ("x_b", json!(-2_147_483_649i64)),
        ("x_c", json!(4_294_967_295u64)),
        ("x_d", json!(4_294_967_296u64)),
        ("x_e", json!(-0.0)),
        ("x_f", json!(0.5)),
    ] {
        opts.extra.insert(k.into(), v);
    }
    let packed = walk(&codec::options_to_msgpack(&opts).unwrap()).unwrap();
    assert_eq!(
        packed.ints,
        vec![(0xd2, -2_147_483_648), (0xce, 4_294_967_295), (0x00, 0)]
    );
    assert_eq!(
        packed.floats,
        vec![
            (0xcb, -2_147_483_649.0),
            (0xcb, 4_294_967_296.0),
            (0xcb, 0.5)
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Bugs, shown by failing tests
// ---------------------------------------------------------------------------------------------

#[test]

fn msgpack_never_silently_drops_map_entries() {
    let mut opts = JobOptions::new();
    for i in 0..70_000 {
        opts.extra.insert(format!("x_{i}"), json!(i));
    }
    match codec::options_to_msgpack(&opts) {
        // msgpackr throws "Object is too large to serialize with fast 16-bit map size".
        Err(_) => {}
        Ok(bytes) => {
            let back = codec::options_from_msgpack(&bytes).unwrap().options;
            assert_eq!(back.extra.len(), 70_000, "entries were dropped");
        }
    }
}

#[test]

fn arbitrary_jitter_round_trips_through_json() {
    // 0.9856906946328695 is what `JSON.stringify` writes for this double; it parses back as
    // ...696 without serde_json's `float_roundtrip` feature.
    let opts = JobOptions::new()
        .backoff(Backoff::fixed(Duration::from_secs(1)).jitter(0.985_690_694_632_869_5));
    let json = codec::options_to_json(&opts, KeyStyle::Short);
    assert_eq!(
        json,
        r#"{"backoff":{"type":"fixed","delay":1000,"jitter":0.9856906946328695}}"#
    );
    assert_eq!(codec::options_from_json(&json).unwrap().options, opts);
    proptest!(|(j in 0.0f64..=1.0)| {
        let opts = JobOptions::new().backoff(Backoff::fixed(Duration::from_secs(1)).jitter(j));
        let back = codec::options_from_json(&codec::options_to_json(&opts, KeyStyle::Long)).unwrap();
        prop_assert_eq!(back.options, opts);
    });
}

#[test]

fn fractional_durations_past_2_pow_53_nanoseconds_round_trip() {
    // read_units: `x * 1e6` rounds before the fraction is split off.
    // 2^40 + 0.5 is exactly representable as a JavaScript number.
    let delay = Duration::from_millis(1 << 40) + Duration::from_micros(500);
    let opts = JobOptions::new().delay(delay);
    let json = codec::options_to_json(&opts, KeyStyle::Short);
    assert_eq!(json, r#"{"delay":1099511627776.5}"#);
    assert_eq!(
        codec::options_from_json(&json).unwrap().options.delay,
        Some(delay)
    );
    // in_units: `nanos as f64 / 1e9` rounds 318421058038500000000 ns before dividing, so the
    // JSON text itself is wrong: 318421058038.50006 instead of 318421058038.5.
    let age = Duration::from_secs(318_421_058_038) + Duration::from_millis(500);
    let opts = JobOptions::new().remove_on_complete(KeepJobs::policy_age(age));
    let json = codec::options_to_json(&opts, KeyStyle::Long);
    assert_eq!(json, r#"{"removeOnComplete":{"age":318421058038.5}}"#);
    assert_eq!(codec::options_from_json(&json).unwrap().options, opts);
}

#[test]

fn large_integers_in_extra_come_back_from_msgpack_as_integers() {
    let mut opts = JobOptions::new();
    opts.extra.insert("x_big".into(), json!(5_000_000_000u64));
    opts.extra.insert("x_neg".into(), json!(-5_000_000_000i64));
    let back = codec::options_from_msgpack(&codec::options_to_msgpack(&opts).unwrap())
        .unwrap()
        .options;
    // The JSON text is already the same (`5000000000`); only the in-memory value differs.
    assert_eq!(
        codec::options_to_json(&back, KeyStyle::Short),
        codec::options_to_json(&opts, KeyStyle::Short)
    );
    assert_eq!(back.extra["x_big"].as_u64(), Some(5_000_000_000));
    assert_eq!(back.extra["x_neg"].as_i64(), Some(-5_000_000_000));
}

// ---------------------------------------------------------------------------------------------
// Job hash round trip
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct JobParts {
    name: String,
    data: Value,
    opts: JobOptions,
    timestamp: u64,
    processed_on: Option<u64>,
    finished_on: Option<u64>,
    return_value: Option<Value>,
    failed_reason: Option<String>,
    stacktrace: Vec<String>,
    counters: (u32, u32, u32),
    processed_by: Option<String>,
    progress: Value,
    strings: (Option<String>, Option<String>, Option<String>),
}

fn job_parts() -> BoxedStrategy<JobParts> {
    use proptest::option::of;
    (
        (
            ".{0,12}",
            json_value(),
            job_options(),
            safe_u64(),
            of(safe_u64()),
            of(safe_u64()),
            of(json_value()),
        )
            .boxed(),
        (
            of(".{0,20}"),
            prop::collection::vec(".{0,20}", 0..3),
            (any_u32(), any_u32(), any_u32()),
            // Optional text fields are never empty: Node reads an empty field as absent.
            of(".{1,10}"),
            prop_oneof![
                Just(json!(0)),
                (0u32..=100).prop_map(Value::from),
                json_value()
            ],
            (of(".{1,10}"), of(".{1,10}"), of(".{1,10}")),
        )
            .boxed(),
    )
        .prop_map(
            |(
                (name, data, opts, timestamp, processed_on, finished_on, return_value),
                (failed_reason, stacktrace, counters, processed_by, progress, strings),
            )| JobParts {
                name,
                data,
                opts,
                timestamp,
                processed_on,
                finished_on,
                return_value,
                failed_reason,
                stacktrace,
                counters,
                processed_by,
                progress,
                strings,
            },
        )
        .boxed()
}

fn build_job(p: &JobParts) -> Job {
    let mut job = Job::new(
        p.name.clone(),
        p.data.to_string(),
        p.opts.clone(),
        p.timestamp,
    );
    job.processed_on = p.processed_on;
    job.finished_on = p.finished_on;
    job.return_value = p.return_value.as_ref().map(Value::to_string);
    job.failed_reason.clone_from(&p.failed_reason);
    job.stacktrace.clone_from(&p.stacktrace);
    (job.attempts_made, job.attempts_started, job.stalled_counter) = p.counters;
    job.processed_by.clone_from(&p.processed_by);
    job.progress = p.progress.clone();
    (
        job.repeat_job_key,
        job.deferred_failure,
        job.telemetry_metadata,
    ) = p.strings.clone();
    job
}

proptest! {
    /// `id` is the hash key, not a field: `from_hash` takes it as an argument. A job whose hash
    /// `delay` field is read back is whole milliseconds (upstream's `parseInt`), whatever the
    /// fraction in `opts.delay`; every other field comes back as it was.
    #[test]
    fn job_hash_round_trip(parts in job_parts()) {
        let job = build_job(&parts);
        let hash = job.to_hash();
        prop_assert!(hash.iter().all(|(k, _)| *k != "id"), "id is not a hash field");
        let back = Job::from_hash(job.id.as_str(), hash.clone()).unwrap();
        let mut expected = job.clone();
        expected.delay = Duration::from_millis(u64::try_from(job.delay.as_millis()).unwrap());
        prop_assert_eq!(&back, &expected);
        // Reading and writing again is stable.
        prop_assert_eq!(back.to_hash(), hash);
    }

    /// Counters at 0 and a progress of 0 are not written, and read back as 0.
    #[test]
    fn zero_counters_and_progress_are_not_written(parts in job_parts()) {
        let mut job = build_job(&parts);
        job.attempts_made = 0;
        job.attempts_started = 0;
        job.stalled_counter = 0;
        job.progress = json!(0);
        let hash = job.to_hash();
        for field in ["atm", "ats", "stc", "progress", "attemptsMade"] {
            prop_assert!(hash.iter().all(|(k, _)| *k != field), "{} written", field);
        }
        let back = Job::from_hash(job.id.as_str(), hash).unwrap();
        prop_assert_eq!(back.attempts_made, 0);
        prop_assert_eq!(back.attempts_started, 0);
        prop_assert_eq!(back.stalled_counter, 0);
        prop_assert_eq!(back.progress, json!(0));
    }
}

#[test]
fn new_job_id_comes_from_opts_and_from_hash_takes_the_key() {
    let job = Job::new("n", "{}".into(), JobOptions::new(), 5);
    assert_eq!(job.id.as_str(), "");
    let job = Job::new("n", "{}".into(), JobOptions::new().job_id("abc"), 5);
    assert_eq!(job.id.as_str(), "abc");
    // from_hash never reads an id from the fields: the key wins.
    let back = Job::from_hash("42", job.to_hash()).unwrap();
    assert_eq!(back.id.as_str(), "42");
    assert_eq!(back.opts.job_id, Some(JobId::from("abc")));
}

#[test]
fn fractional_delay_keeps_its_fraction_in_opts_only() {
    let delay = Duration::from_micros(1500);
    let job = Job::new("n", "{}".into(), JobOptions::new().delay(delay), 7);
    let hash = job.to_hash();
    assert!(hash.contains(&("delay", "1".to_owned())));
    assert!(hash.contains(&("opts", r#"{"delay":1.5}"#.to_owned())));
    let back = Job::from_hash("1", hash).unwrap();
    assert_eq!(back.delay, Duration::from_millis(1));
    assert_eq!(back.opts.delay, Some(delay));
}

#[test]
fn float_progress_zero_is_written_and_read_back() {
    let mut job = Job::new("n", "{}".into(), JobOptions::new(), 7);
    job.progress = json!(0.5);
    let back = Job::from_hash("1", job.to_hash()).unwrap();
    assert_eq!(back.progress, json!(0.5));
    job.progress = json!({});
    let hash = job.to_hash();
    assert!(hash.contains(&("progress", "{}".to_owned())));
    assert_eq!(Job::from_hash("1", hash).unwrap().progress, json!({}));
}

// ---------------------------------------------------------------------------------------------
// Backoff
// ---------------------------------------------------------------------------------------------

/// Upstream's formula without jitter, in milliseconds (`backoffs.ts`).
fn upstream_ms(strategy: &BackoffStrategy, delay_ms: f64, attempts_made: u32) -> f64 {
    match strategy {
        BackoffStrategy::Fixed => delay_ms,
        BackoffStrategy::Exponential => {
            (2f64.powi(i32::try_from(attempts_made).unwrap() - 1) * delay_ms).round()
        }
        BackoffStrategy::Custom(_) => unreachable!(),
    }
}

fn builtin() -> impl Strategy<Value = BackoffStrategy> {
    prop_oneof![
        Just(BackoffStrategy::Fixed),
        Just(BackoffStrategy::Exponential)
    ]
}

/// A duration as JavaScript's number of milliseconds, exact for whole milliseconds.
#[allow(clippy::cast_precision_loss)]
fn ms_f64(d: Duration) -> f64 {
    d.as_millis() as f64 + f64::from(d.subsec_nanos() % 1_000_000) / 1e6
}

proptest! {
    #[test]
    fn backoff_without_jitter_is_upstreams_formula(
        strategy in builtin(),
        delay_ms in prop_oneof![0u64..1000, 0u64..1_000_000],
        // Upstream calls the strategy with `attemptsMade + 1`, so at least 1; attempt 0 hits
        // the rounding bug of `backoff_with_jitter_is_exactly_upstreams_expression`.
        attempts in 1u32..=12,
        random in 0.0f64..1.0,
        zero_jitter in any::<bool>(),
    ) {
        let b = Backoff {
            strategy: strategy.clone(),
            delay: Some(Duration::from_millis(delay_ms)),
            jitter: zero_jitter.then_some(0.0),
        };
        let expected = upstream_ms(&strategy, delay_ms as f64, attempts);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let expected = Duration::from_millis(expected as u64);
        prop_assert_eq!(b.delay_for_attempt(attempts, random), Some(expected));
    }

    #[test]
    fn backoff_with_jitter_stays_within_bounds(
        strategy in builtin(),
        delay_ms in prop_oneof![0u64..1000, 0u64..1_000_000],
        attempts in 0u32..=12,
        jitter in prop_oneof![Just(1.0f64), 0.0f64..=1.0],
        random in prop_oneof![Just(0.0f64), Just(1.0 - f64::EPSILON), 0.0f64..1.0],
    ) {
        let full = Backoff { strategy: strategy.clone(), delay: Some(Duration::from_millis(delay_ms)), jitter: None };
        let max = full.delay_for_attempt(attempts, random).unwrap();
        let got = Backoff { jitter: Some(jitter), ..full }.delay_for_attempt(attempts, random).unwrap();
        let max_ms = ms_f64(max);
        let got_ms = ms_f64(got);
        prop_assert!(got <= max, "{got:?} > {max:?}");
        prop_assert!(got_ms >= (1.0 - jitter) * max_ms - 1.0, "{got:?} below (1 - {jitter}) * {max:?}");
        // Math.floor: whole milliseconds.
        prop_assert_eq!(got.subsec_nanos() % 1_000_000, 0, "{:?} is not whole ms", got);
        // Within one millisecond of upstream's expression (exactness: see the ignored
        // `backoff_with_jitter_is_exactly_upstreams_expression`).
        let expected = upstream_jitter_ms(max_ms, jitter, random);
        prop_assert!((got_ms - expected).abs() <= 1.0, "{got_ms} vs upstream {expected}");
    }
}

/// `Math.floor(Math.random() * maxDelay * jitter + maxDelay * (1 - jitter))`, or `maxDelay`
/// without jitter.
fn upstream_jitter_ms(max_ms: f64, jitter: f64, random: f64) -> f64 {
    if jitter > 0.0 {
        (random * max_ms * jitter + max_ms * (1.0 - jitter)).floor()
    } else {
        max_ms
    }
}

#[test]

fn backoff_with_jitter_is_exactly_upstreams_expression() {
    // Node: Math.floor(0 * 1118 * 0.5 + 1118 * 0.5) === 559
    let b = Backoff::fixed(Duration::from_millis(1118)).jitter(0.5);
    assert_eq!(
        b.delay_for_attempt(1, 0.0),
        Some(Duration::from_millis(559))
    );
    // Without jitter too, where the product lands on .5: Math.round(0.5 * 513401) === 256701.
    let b = Backoff::exponential(Duration::from_millis(513_401));
    assert_eq!(
        b.delay_for_attempt(0, 0.0),
        Some(Duration::from_millis(256_701))
    );
    proptest!(|(
        strategy in builtin(),
        delay_ms in 0u64..1_000_000,
        attempts in 0u32..=12,
        jitter in prop_oneof![Just(0.5f64), Just(0.25), 0.0f64..=1.0],
        random in prop_oneof![Just(0.0f64), 0.0f64..1.0],
    )| {
        let b = Backoff { strategy: strategy.clone(), delay: Some(Duration::from_millis(delay_ms)), jitter: Some(jitter) };
        let max_ms = upstream_ms(&strategy, delay_ms as f64, attempts);
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let expected = Duration::from_millis(upstream_jitter_ms(max_ms, jitter, random) as u64);
        prop_assert_eq!(b.delay_for_attempt(attempts, random), Some(expected));
    });
}

#[test]
fn backoff_custom_strategy_has_no_builtin_delay() {
    let b = Backoff::custom("mine").delay(Duration::from_secs(1));
    assert_eq!(b.delay_for_attempt(3, 0.5), None);
}

#[test]
fn backoff_exponential_first_attempts() {
    let b = Backoff::exponential(Duration::from_millis(1000));
    let got: Vec<Option<Duration>> = (0..=4).map(|n| b.delay_for_attempt(n, 0.0)).collect();
    let ms = |n| Some(Duration::from_millis(n));
    // attempt 0 is 2^-1 * delay, as upstream computes it.
    assert_eq!(got, vec![ms(500), ms(1000), ms(2000), ms(4000), ms(8000)]);
    // round(2^-1 * 3) = 2 (Math.round rounds half up)
    let b = Backoff::exponential(Duration::from_millis(3));
    assert_eq!(b.delay_for_attempt(0, 0.0), ms(2));
}

#[test]

fn backoff_exponential_never_panics_on_many_attempts() {
    let b = Backoff::exponential(Duration::from_secs(1));
    for attempts in [64, 65, 100, 1024, u32::MAX] {
        let got = std::panic::catch_unwind(|| b.delay_for_attempt(attempts, 0.5));
        let got = got.unwrap_or_else(|_| panic!("panicked at attempt {attempts}"));
        assert!(
            got.unwrap() >= Duration::from_secs(1 << 62),
            "attempt {attempts}"
        );
    }
}

#[test]

fn backoff_large_whole_millis_stay_whole() {
    // round(2^11 * 4096774) = 8390193152 ms (97 days); we get 8390193.152000001 s.
    let b = Backoff::exponential(Duration::from_millis(4_096_774));
    assert_eq!(
        b.delay_for_attempt(12, 0.0),
        Some(Duration::from_millis(8_390_193_152))
    );
    let ms = (1u64 << 40) + 1;
    let b = Backoff::fixed(Duration::from_millis(ms));
    assert_eq!(b.delay_for_attempt(1, 0.0), Some(Duration::from_millis(ms)));
}
