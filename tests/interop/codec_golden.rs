//! Golden tests of the job-options codec against Node.js BullMQ 6.7.6 itself.
//!
//! `tests/node/opts-golden.mjs` adds every case of `tests/node/opts-corpus.mjs` through a real
//! Node.js `Queue` on the test Redis and prints the msgpack bytes msgpackr packed and the `opts`
//! JSON the Lua script stored. For each case this test checks that Rust
//! 1. decodes Node's bytes to the typed value written below,
//! 2. reads the stored JSON to the same options Node reads back from it,
//! 3. encodes the typed value to exactly Node's bytes, which the scripts' cmsgpack + cjson
//!    turn into exactly the JSON Node's job hash holds.

use crate::support;

use crate::corpus::{expected, ms, raw};

use std::collections::BTreeSet;
use std::sync::OnceLock;

use bullmq::JobOptions;
use bullmq::options::{Backoff, Deduplication, ParentOptions, ValidationError};
use bullmq_core::codec::{self, KeyStyle};
use serde_json::{Value, json};

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
