//! Golden tests of the job-options codec against Node.js BullMQ 6.7.0 itself.
//!
//! `tests/node/opts-golden.mjs` adds every case of `tests/node/opts-corpus.mjs` through a real
//! Node.js `Queue` on the test Redis and prints the msgpack bytes msgpackr packed and the `opts`
//! JSON the Lua script stored. For each case this test checks that Rust
//! 1. decodes Node's bytes to the typed value written below,
//! 2. reads the stored JSON to the same options Node reads back from it,
//! 3. encodes the typed value to exactly Node's bytes, which the scripts' cmsgpack + cjson
//!    turn into exactly the JSON Node's job hash holds.

mod support;

use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::time::Duration;

use bullmq::core::JobOptions;
use bullmq::core::codec::{self, KeyStyle};
use bullmq::core::options::{
    Backoff, Deduplication, KeepJobs, ParentOptions, RepeatOptions, Telemetry, ValidationError,
};
use serde_json::{Value, json};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Options Node accepts unchecked but that lie outside our typed domain (negative or ≥ 2^32
/// counts, negative delays): kept verbatim in `extra`, reported as invalid.
fn raw(opts: JobOptions, key: &str, value: Value) -> JobOptions {
    let mut opts = opts;
    opts.extra.insert(key.to_owned(), value);
    opts
}

/// The typed value each corpus case must decode to.
#[allow(clippy::too_many_lines)]
fn expected(name: &str, parent: &ParentOptions) -> Option<JobOptions> {
    let o = || JobOptions::new().with_node_defaults();
    let p = || parent.clone();
    Some(match name {
        "empty" => o(),
        "delay-0" => o().delay(ms(0)),
        "delay-1000" => o().delay(ms(1000)),
        "delay-uint32-max" => o().delay(ms(4_294_967_295)),
        "delay-2pow32" => o().delay(ms(4_294_967_296)),
        "delay-large" => o().delay(ms(1_234_567_890_123_456)),
        "delay-float" => o().delay(Duration::from_micros(1500)),
        "delay-negative" => raw(o(), "delay", json!(-1)),
        "priority-0" => o().priority(0),
        "priority-1" => o().priority(1),
        "priority-127" => o().priority(127),
        "priority-128" => o().priority(128),
        "priority-max" => o().priority(2_097_151),
        "priority-negative" => raw(o(), "priority", json!(-1)),
        "attempts-0" => o().attempts(0),
        "attempts-3" => o().attempts(3),
        "attempts-2pow31" => o().attempts(2_147_483_648),
        "attempts-2pow32" => raw(JobOptions::new(), "attempts", json!(4_294_967_296_u64)),
        "attempts-negative" => raw(JobOptions::new(), "attempts", json!(-1)),
        "attempts-int32-min" => raw(JobOptions::new(), "attempts", json!(-2_147_483_648)),
        "attempts-below-int32" => raw(JobOptions::new(), "attempts", json!(-2_147_483_649_i64)),
        "backoff-number" => o().attempts(3).backoff(Backoff::fixed(ms(1000))),
        "backoff-number-0" => o().backoff(Backoff::fixed(ms(0))),
        "backoff-fixed" => o().attempts(3).backoff(Backoff::fixed(ms(500))),
        "backoff-exponential-jitter" => o()
            .attempts(5)
            .backoff(Backoff::exponential(ms(1000)).jitter(0.5)),
        "backoff-fixed-jitter-quarter" => o().backoff(Backoff::fixed(ms(250)).jitter(0.25)),
        "backoff-jitter-1" => o().backoff(Backoff::exponential(ms(10)).jitter(1.0)),
        "backoff-custom-type" => o()
            .attempts(2)
            .backoff(Backoff::custom("my-custom-strategy")),
        "backoff-custom-type-delay" => o().backoff(Backoff::custom("linear").delay(ms(2000))),
        "lifo-true" => o().lifo(true),
        "lifo-false" => o().lifo(false),
        "jobid-custom" => o().job_id("my-custom-id"),
        "jobid-unicode" => o().job_id("job-ü-✓"),
        "jobid-repeat-form" => o().job_id("repeat:abc:1700000000000"),
        "timestamp" => o().timestamp(1_700_000_000_000),
        "jobid-timestamp-delay" => o()
            .job_id("custom-delayed")
            .timestamp(1_700_000_000_123)
            .delay(ms(60_000)),
        "roc-true" => o().remove_on_complete(KeepJobs::RemoveAll),
        "roc-false" => o().remove_on_complete(KeepJobs::KeepAll),
        "roc-number" => o().remove_on_complete(KeepJobs::Newest(100)),
        "roc-count" => o().remove_on_complete(KeepJobs::count(10)),
        "roc-age" => o().remove_on_complete(KeepJobs::age(secs(3600))),
        "roc-age-count-limit" => o().remove_on_complete(KeepJobs::Policy {
            age: Some(secs(86_400)),
            count: Some(1000),
            limit: Some(50),
        }),
        "rof-true" => o().remove_on_fail(KeepJobs::RemoveAll),
        "rof-false" => o().remove_on_fail(KeepJobs::KeepAll),
        "rof-number" => o().remove_on_fail(KeepJobs::Newest(500)),
        "rof-count" => o().remove_on_fail(KeepJobs::count(0)),
        "rof-age" => o().remove_on_fail(KeepJobs::age(secs(604_800))),
        "rof-age-count-limit" => o().remove_on_fail(KeepJobs::Policy {
            age: Some(secs(60)),
            count: Some(5),
            limit: Some(1),
        }),
        "keeplogs" => o().keep_logs(10),
        "keeplogs-0" => o().keep_logs(0),
        "stacktracelimit-0" => o().stack_trace_limit(0),
        "stacktracelimit-5" => o().stack_trace_limit(5),
        "sizelimit" => o().size_limit(1024),
        "parent" => o().parent(p()),
        "parent-fpof" => o().parent(p()).fail_parent_on_failure(true),
        "parent-cpof" => o().parent(p()).continue_parent_on_failure(true),
        "parent-idof" => o().parent(p()).ignore_dependency_on_failure(true),
        "parent-rdof" => o().parent(p()).remove_dependency_on_failure(true),
        "parent-fpof-false-idof" => o()
            .parent(p())
            .fail_parent_on_failure(false)
            .ignore_dependency_on_failure(true),
        "dedup-id" => o().deduplication(Deduplication::new("dedup-a")),
        "dedup-id-ttl" => o().deduplication(Deduplication::new("dedup-b").ttl(ms(5000))),
        "dedup-extend-replace" => o().delay(ms(5000)).deduplication(
            Deduplication::new("dedup-c")
                .ttl(ms(5000))
                .extend(true)
                .replace(true),
        ),
        "dedup-reschedule" => o().delay(ms(2000)).deduplication(
            Deduplication::new("dedup-d")
                .ttl(ms(10_000))
                .reschedule(true),
        ),
        "dedup-keep-last-if-active" => {
            o().deduplication(Deduplication::new("dedup-e").keep_last_if_active(true))
        }
        "dedup-ttl-2pow53-plus-2" => {
            o().deduplication(Deduplication::new("dedup-f").ttl(ms(9_007_199_254_740_994)))
        }
        "telemetry-metadata" => o().telemetry(Telemetry {
            metadata: Some(r#"{"traceparent":"00-abc-def-01"}"#.to_owned()),
            omit_context: None,
        }),
        "telemetry-omit-context" => o().telemetry(Telemetry {
            metadata: None,
            omit_context: Some(true),
        }),
        "telemetry-metadata-omit-false" => o().telemetry(Telemetry {
            metadata: Some("opaque-propagation-string".to_owned()),
            omit_context: Some(false),
        }),
        "repeat-passthrough" => o()
            .job_id("repeat:sched-1:1700000005000")
            .timestamp(1_700_000_000_000)
            .delay(ms(5000))
            .repeat(RepeatOptions {
                every: Some(ms(5000)),
                offset: Some(ms(0)),
                count: Some(1),
                ..RepeatOptions::default()
            }),
        "repeatjobkey-stripped" => o().job_id("repeat:sched-2:1700000000000"),
        "combo-typical" => o()
            .priority(10)
            .delay(ms(3000))
            .attempts(5)
            .backoff(Backoff::exponential(ms(1000)))
            .remove_on_complete(KeepJobs::RemoveAll)
            .remove_on_fail(KeepJobs::count(100)),
        "combo-everything-but-parent" => raw(
            JobOptions::new()
                .job_id("combo-1")
                .timestamp(1_700_000_000_000)
                .priority(2_097_151)
                .delay(ms(1_234_567_890_123_456))
                .backoff(Backoff::exponential(Duration::from_micros(1500)).jitter(0.25))
                .lifo(true)
                .remove_on_complete(KeepJobs::Policy {
                    age: Some(secs(3600)),
                    count: Some(10),
                    limit: Some(5),
                })
                .remove_on_fail(KeepJobs::Newest(7))
                .keep_logs(20)
                .stack_trace_limit(0)
                .size_limit(4096)
                .deduplication(
                    Deduplication::new("combo-dedup")
                        .ttl(ms(60_000))
                        .extend(true)
                        .replace(true)
                        .reschedule(false)
                        .keep_last_if_active(false),
                )
                .telemetry(Telemetry {
                    metadata: Some("meta-Ω".to_owned()),
                    omit_context: Some(true),
                }),
            "attempts",
            json!(4_294_967_296_u64),
        ),
        "combo-parent" => o()
            .job_id("child-1")
            .priority(3)
            .attempts(2)
            .backoff(Backoff::fixed(ms(250)))
            .remove_on_complete(KeepJobs::KeepAll)
            .remove_on_fail(KeepJobs::age(Duration::from_millis(1500)))
            .keep_logs(1)
            .parent(p())
            .fail_parent_on_failure(true)
            .telemetry(Telemetry {
                metadata: Some("m".to_owned()),
                omit_context: None,
            }),
        "combo-delayed-parent-rdof" => raw(
            JobOptions::new()
                .delay(ms(1))
                .lifo(false)
                .stack_trace_limit(2_147_483_648)
                .parent(p())
                .remove_dependency_on_failure(true),
            "attempts",
            json!(-1),
        ),
        _ => return None,
    })
}

#[derive(Debug, serde::Deserialize)]
struct Golden {
    name: String,
    msgpack: Option<String>,
    stored: Option<String>,
    decoded: Option<Value>,
    rejected: Option<String>,
}

/// What the job scripts do with packed options: unpack with cmsgpack, store with cjson.
const STORE_AS_LUA_DOES: &str = "return cjson.encode(cmsgpack.unpack(ARGV[1]))";

async fn stored_by_lua(con: &mut redis::aio::MultiplexedConnection, packed: &[u8]) -> String {
    redis::cmd("EVAL")
        .arg(STORE_AS_LUA_DOES)
        .arg(0)
        .arg(packed)
        .query_async(con)
        .await
        .expect("EVAL cjson.encode(cmsgpack.unpack(...))")
}

/// One run of the Node script per test process, shared by the tests below.
fn golden() -> &'static (String, Vec<Golden>) {
    static RUN: OnceLock<(String, Vec<Golden>)> = OnceLock::new();
    RUN.get_or_init(|| {
        let prefix = support::unique_prefix();
        let out = support::run_node("opts-golden.mjs", &[("GOLDEN_PREFIX", &prefix)]);
        let cases = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line from opts-golden.mjs"))
            .collect();
        (prefix, cases)
    })
}

#[tokio::test]
async fn job_options_match_node_bullmq_byte_for_byte() {
    let (prefix, cases) = golden();
    let parent = ParentOptions::new("golden-parent", format!("{prefix}:parentq"));
    let mut con = support::redis().await;

    let accepted: Vec<&Golden> = cases.iter().filter(|c| c.rejected.is_none()).collect();
    assert!(accepted.len() >= 40, "only {} golden cases", accepted.len());

    for case in &accepted {
        let name = case.name.as_str();
        let want =
            expected(name, &parent).unwrap_or_else(|| panic!("no Rust expectation for {name}"));
        let node_bytes = hex::decode(case.msgpack.as_deref().expect("msgpack")).expect("hex");
        let stored = case.stored.as_deref().expect("stored");

        // 1. Node's bytes decode to the typed value.
        let from_bytes = codec::options_from_msgpack(&node_bytes).expect("decode msgpack");
        assert_eq!(from_bytes.options, want, "{name}: decoding Node's msgpack");
        let invalid: BTreeSet<&str> = from_bytes.invalid.iter().map(|i| i.key.as_str()).collect();
        let extra: BTreeSet<&str> = want.extra.keys().map(String::as_str).collect();
        assert_eq!(invalid, extra, "{name}: options reported invalid");

        // 2. The stored JSON reads as Node reads it back (after cjson's rounding, if any).
        let from_stored = codec::options_from_json(stored).expect("decode stored");
        let node_view = codec::options_from_value(case.decoded.as_ref().expect("decoded"))
            .expect("decode Node's view");
        assert_eq!(
            from_stored.options, node_view.options,
            "{name}: reading the stored JSON"
        );

        // 3. Our bytes are Node's, and the scripts store them as the same JSON.
        let ours = codec::options_to_msgpack(&want).expect("encode");
        assert_eq!(
            hex::encode(&ours),
            hex::encode(&node_bytes),
            "{name}: msgpack bytes"
        );
        assert_eq!(
            stored_by_lua(&mut con, &ours).await,
            stored,
            "{name}: stored JSON"
        );
    }

    // Every expectation written here was exercised.
    let seen: BTreeSet<&str> = accepted.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(seen.len(), accepted.len(), "duplicate case names");
}

#[tokio::test]
async fn options_round_trip_through_lua_unchanged() {
    // What Rust writes, the scripts store, and Rust reads back: the same typed options, for a
    // value with every option set in both key styles.
    let parent = ParentOptions::new("p1", "bull:parents");
    let opts = expected("combo-parent", &parent)
        .expect("case")
        .with_node_defaults();
    let mut con = support::redis().await;
    let stored = stored_by_lua(&mut con, &codec::options_to_msgpack(&opts).expect("encode")).await;
    let back = codec::options_from_json(&stored).expect("decode");
    assert_eq!(back.options, opts);
    assert!(back.invalid.is_empty());
    let long = codec::options_to_json(&opts, KeyStyle::Long);
    assert!(
        long.contains("\"failParentOnFailure\":true") && !long.contains("fpof"),
        "{long}"
    );
    assert_eq!(codec::options_from_json(&long).expect("long").options, opts);
}

/// The Rust counterpart of each option set Node.js rejects, or `None` where Rust's types make
/// the mistake impossible to write.
fn rust_rejection(name: &str, parent: &ParentOptions) -> Option<Result<(), ValidationError>> {
    let p = || parent.clone();
    let o = JobOptions::new;
    let opts = match name {
        "priority-over-limit" => o().priority(2_097_152),
        // `priority` is a `u32`: a fraction cannot be written.
        "priority-float" => return None,
        "jobid-integer" => o().job_id("123"),
        "jobid-colon" => o().job_id("a:b"),
        "jobid-zero" => o().job_id("0"),
        "jobid-zero-colon" => o().job_id("0:a:b"),
        "parent-exclusive-options" => o()
            .parent(p())
            .fail_parent_on_failure(true)
            .ignore_dependency_on_failure(true),
        "parent-exclusive-options-all" => o()
            .parent(p())
            .fail_parent_on_failure(true)
            .continue_parent_on_failure(true)
            .ignore_dependency_on_failure(true)
            .remove_dependency_on_failure(true),
        "dedup-without-id" => o().deduplication(Deduplication::new("").ttl(ms(1000))),
        "dedup-with-parent" => o().parent(p()).deduplication(Deduplication::new("x")),
        "backoff-jitter-over-1" => o().backoff(Backoff::fixed(ms(1000)).jitter(1.5)),
        "backoff-jitter-negative" => o().backoff(Backoff::fixed(ms(1000)).jitter(-0.1)),
        "sizelimit-exceeded" => {
            return Some(
                o().size_limit(10)
                    .check_data_size("golden", r#"{"payload":"more than ten bytes"}"#),
            );
        }
        "debounce-removed" => raw(o(), "debounce", json!({"id": "x"})),
        other => panic!("no Rust counterpart for Node's rejected case {other}"),
    };
    Some(opts.validate())
}

#[test]
fn what_node_rejects_rust_rejects() {
    let (prefix, cases) = golden();
    let parent = ParentOptions::new("golden-parent", format!("{prefix}:parentq"));
    let rejected: Vec<&Golden> = cases.iter().filter(|c| c.rejected.is_some()).collect();
    assert!(
        rejected.len() >= 10,
        "only {} rejected cases",
        rejected.len()
    );
    for case in rejected {
        if let Some(result) = rust_rejection(&case.name, &parent) {
            let err = result.expect_err(&case.name);
            assert!(!err.problems().is_empty(), "{}: {err}", case.name);
        }
    }
}
