//! `Job::from_hash` on job hashes as another runtime, an older BullMQ or a human with
//! `redis-cli HSET` might leave them (docs/RELIABILITY.md I6).
//!
//! The reference is Node.js BullMQ 6.7.6's `rawToJobJson` / `optsFromJSON`
//! (`dist/cjs/classes/redis-queue-backend.js`) and `Job.fromJSON` (`classes/job.js`). Where
//! Rust deliberately differs (it reports an error where Node would carry on with `NaN`), the
//! test says so.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bullmq_core::codec::{self, KeyStyle};
use bullmq_core::job::JobDecodeError;
use bullmq_core::options::{Backoff, Deduplication, InvalidOption, Telemetry};
use bullmq_core::{Job, JobId, JobOptions};
use serde_json::{Value, json};

/// A well-formed hash as the Lua scripts write it, with `overrides` replacing or adding fields
/// and `removed` fields left out.
fn hash(overrides: &[(&str, &str)], removed: &[&str]) -> Vec<(String, String)> {
    let mut fields: Vec<(String, String)> = [
        ("name", "email"),
        ("data", r#"{"to":"a@b.c"}"#),
        ("opts", r#"{"attempts":3}"#),
        ("timestamp", "1700000000000"),
        ("delay", "0"),
        ("priority", "0"),
    ]
    .iter()
    .filter(|(k, _)| !removed.contains(k))
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    for (k, v) in overrides {
        match fields.iter_mut().find(|(name, _)| name == k) {
            Some(slot) => slot.1 = (*v).to_owned(),
            None => fields.push(((*k).to_owned(), (*v).to_owned())),
        }
    }
    fields
}

fn read(overrides: &[(&str, &str)]) -> Result<Job, JobDecodeError> {
    Job::from_hash("1", hash(overrides, &[]))
}

/// The error of a job whose `field` holds `raw`, which must name that field.
fn refused(field: &str, raw: &str) -> JobDecodeError {
    let err = read(&[(field, raw)]).unwrap_err();
    assert_eq!(err.field, field, "{raw}");
    err
}

fn read_opts(opts: &str) -> Job {
    read(&[("opts", opts)]).unwrap()
}

fn stored_opts(job: &Job) -> String {
    job.to_hash()
        .into_iter()
        .find(|(k, _)| *k == "opts")
        .unwrap()
        .1
}

fn invalid(key: &str, reason: &str) -> InvalidOption {
    InvalidOption {
        key: key.to_owned(),
        reason: reason.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// data
// ---------------------------------------------------------------------------------------------

#[test]
fn missing_data_reads_as_empty_object() {
    // Node: `data: raw.data || '{}'`.
    let job = Job::from_hash("1", hash(&[], &["data"])).unwrap();
    assert_eq!(job.data, "{}");
    assert_eq!(job.data_as::<Value>().unwrap(), json!({}));
}

#[test]
fn an_empty_hash_reads_as_defaults() {
    let job = Job::from_hash("9", Vec::<(String, String)>::new()).unwrap();
    assert_eq!(job.id.as_str(), "9");
    assert_eq!(job.name, "");
    assert_eq!(job.data, "{}");
    assert_eq!(job.opts, JobOptions::default());
    assert_eq!(job.timestamp, 0);
    assert_eq!(job.delay, Duration::ZERO);
    assert_eq!(job.progress, json!(0));
    assert_eq!(job.attempts_made, 0);
}

#[test]
fn data_that_is_not_json_is_an_error_naming_data() {
    let err = refused("data", "{oops");
    assert_eq!(err.job_id, "1");
    assert!(
        err.to_string()
            .starts_with("job 1: field `data`: not JSON: "),
        "{err}"
    );
}

#[test]
fn data_is_kept_byte_for_byte() {
    // Key order, spacing and escapes as another runtime wrote them.
    let raw = r#"{ "b":1, "a":"\u00e9", "10":[] }"#;
    let job = read(&[("data", raw)]).unwrap();
    assert_eq!(job.data, raw);
    assert!(job.to_hash().contains(&("data", raw.to_owned())));
}

#[test]
fn deeply_nested_data_past_the_parser_limit_is_an_error_not_a_panic() {
    // serde_json stops at 128 levels; Node's JSON.parse would accept this job.
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let err = refused("data", &deep);
    assert!(err.reason.contains("recursion limit exceeded"), "{err}");
    // Within the limit it is fine.
    let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
    assert_eq!(read(&[("data", &ok)]).unwrap().data, ok);
}

// ---------------------------------------------------------------------------------------------
// opts
// ---------------------------------------------------------------------------------------------

#[test]
fn opts_that_are_not_json_are_an_error_naming_opts() {
    let err = refused("opts", "{attempts:3}");
    assert!(
        err.to_string()
            .starts_with("job 1: field `opts`: job options are not a JSON object: "),
        "{err}"
    );
}

#[test]
fn opts_stored_as_an_empty_array_are_no_options() {
    // cjson encodes an empty Lua table as `{}`, but other writers store `[]`.
    let job = read_opts("[]");
    assert_eq!(job.opts, JobOptions::default());
    assert!(job.invalid_opts.is_empty());
    assert_eq!(stored_opts(&job), "{}");
}

#[test]
fn opts_that_are_json_but_not_an_object_are_an_error_naming_opts() {
    // Node: `Object.entries(null)` throws; `[1]` and `5` it would read as {"0":1} and {}.
    for (raw, found) in [
        ("null", "null"),
        ("[1]", "[1]"),
        ("5", "5"),
        (r#""x""#, r#""x""#),
    ] {
        let err = refused("opts", raw);
        assert_eq!(
            err.to_string(),
            format!("job 1: field `opts`: job options are not a JSON object: found {found}"),
        );
    }
}

#[test]
fn missing_opts_are_no_options() {
    let job = Job::from_hash("1", hash(&[], &["opts"])).unwrap();
    assert_eq!(job.opts, JobOptions::default());
}

#[test]
fn unknown_option_keys_are_kept_and_written_back() {
    let raw = r#"{"attempts":3,"foo":{"bar":[1,2.5,"x"]},"zz":null,"del":5000}"#;
    let job = read_opts(raw);
    assert_eq!(job.opts.attempts, Some(3));
    assert!(job.invalid_opts.is_empty());
    assert_eq!(job.opts.extra.len(), 3);
    assert_eq!(job.opts.extra["foo"], json!({"bar": [1, 2.5, "x"]}));
    assert_eq!(job.opts.extra["zz"], Value::Null);
    assert_eq!(job.opts.extra["del"], json!(5000));
    // Written back in their stored order (as Node.js keeps a read job's key order); the
    // values are untouched.
    assert_eq!(stored_opts(&job), raw);
}

#[test]
fn one_bad_option_does_not_hide_the_good_ones() {
    let job = read_opts(r#"{"attempts":"x","delay":100,"kl":5}"#);
    assert_eq!(job.opts.delay, Some(Duration::from_millis(100)));
    assert_eq!(job.opts.keep_logs, Some(5));
    assert_eq!(job.opts.attempts, None);
    assert_eq!(
        job.invalid_opts,
        vec![invalid("attempts", r#"expected a number, found "x""#)]
    );
    assert_eq!(job.opts.extra.len(), 1);
    assert_eq!(job.opts.extra["attempts"], json!("x"));
    // Written back in its own slot, unchanged, in either key style.
    assert_eq!(stored_opts(&job), r#"{"attempts":"x","delay":100,"kl":5}"#);
    assert_eq!(
        codec::options_to_json(&job.opts, KeyStyle::Long),
        r#"{"attempts":"x","delay":100,"keepLogs":5}"#
    );
}

#[test]
fn a_bad_short_key_option_is_kept_under_its_stored_key() {
    let job = read_opts(r#"{"de":{"ttl":5},"kl":"many"}"#);
    assert_eq!(job.opts.deduplication, None);
    assert_eq!(job.opts.keep_logs, None);
    assert_eq!(
        job.invalid_opts,
        vec![
            invalid("de", "missing `id`"),
            invalid("kl", r#"expected a number, found "many""#),
        ]
    );
    assert_eq!(stored_opts(&job), r#"{"de":{"ttl":5},"kl":"many"}"#);
    // The long style renames the raw values with their option.
    assert_eq!(
        codec::options_to_json(&job.opts, KeyStyle::Long),
        r#"{"deduplication":{"ttl":5},"keepLogs":"many"}"#
    );
}

#[test]
fn short_and_long_keys_and_telemetry_are_all_read() {
    let job = read_opts(
        r#"{"de":{"id":"d","ttl":100},"fpof":true,"kl":7,"tm":"ctx","omc":false,"keepLogs":9}"#,
    );
    assert_eq!(
        job.opts.deduplication,
        Some(Deduplication::new("d").ttl(Duration::from_millis(100)))
    );
    assert_eq!(job.opts.fail_parent_on_failure, Some(true));
    // Both spellings present: the one read last wins, as in Node's `optsFromJSON`.
    assert_eq!(job.opts.keep_logs, Some(9));
    assert_eq!(
        job.opts.telemetry,
        Some(Telemetry {
            metadata: Some("ctx".into()),
            omit_context: Some(false)
        })
    );
    assert!(job.invalid_opts.is_empty());
}

#[test]
fn bare_number_backoff_and_numeric_job_id_are_coerced() {
    let job = read_opts(r#"{"backoff":1000,"jobId":123}"#);
    assert_eq!(
        job.opts.backoff,
        Some(Backoff::fixed(Duration::from_millis(1000)))
    );
    assert_eq!(job.opts.job_id, Some(JobId::from("123")));
    assert!(job.invalid_opts.is_empty());
}

#[test]
fn cjson_style_floats_are_read_for_integer_options() {
    // What cjson stores for 1234567890123456, and whole numbers written as floats.
    let job = read_opts(
        r#"{"delay":1.2345678901235e+15,"timestamp":1.7e+12,"priority":5.0,"attempts":3e0}"#,
    );
    assert!(job.invalid_opts.is_empty(), "{:?}", job.invalid_opts);
    assert_eq!(
        job.opts.delay,
        Some(Duration::from_millis(1_234_567_890_123_500))
    );
    assert_eq!(job.opts.timestamp, Some(1_700_000_000_000));
    assert_eq!(job.opts.priority, Some(5));
    assert_eq!(job.opts.attempts, Some(3));
    assert_eq!(
        stored_opts(&job),
        r#"{"delay":1234567890123500,"timestamp":1700000000000,"priority":5,"attempts":3}"#
    );
}

#[test]
fn elixir_snake_case_keys_are_kept_as_unknown() {
    let raw = r#"{"remove_on_complete":true,"remove_on_fail":{"count":5},"fail_parent_on_failure":true,"ro":true,"bo":1000}"#;
    let job = read_opts(raw);
    assert!(job.invalid_opts.is_empty());
    assert_eq!(job.opts.remove_on_complete, None);
    assert_eq!(job.opts.remove_on_fail, None);
    assert_eq!(job.opts.fail_parent_on_failure, None);
    assert_eq!(job.opts.backoff, None);
    let keys: Vec<&str> = job.opts.extra.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "bo",
            "fail_parent_on_failure",
            "remove_on_complete",
            "remove_on_fail",
            "ro"
        ]
    );
    let back: Value = serde_json::from_str(&stored_opts(&job)).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(raw).unwrap());
}

#[test]
fn out_of_range_option_numbers_are_reported_and_kept() {
    let job = read_opts(
        r#"{"delay":-5,"attempts":5000000000,"priority":1e300,"kl":-1,"sizeLimit":0.5,"lifo":1}"#,
    );
    assert_eq!(
        job.invalid_opts,
        vec![
            invalid(
                "delay",
                "expected a non-negative number of milliseconds, found -5"
            ),
            invalid(
                "attempts",
                "expected an integer up to 4294967295, found 5000000000"
            ),
            invalid("priority", "expected a non-negative integer, found 1e+300"),
            invalid("kl", "expected a non-negative integer, found -1"),
            invalid("sizeLimit", "expected a non-negative integer, found 0.5"),
            invalid("lifo", "expected a boolean, found 1"),
        ]
    );
    assert_eq!(job.opts.delay, None);
    assert_eq!(job.opts.attempts, None);
    assert_eq!(job.opts.extra.len(), 6);
    assert_eq!(
        stored_opts(&job),
        r#"{"delay":-5,"attempts":5000000000,"priority":1e+300,"kl":-1,"sizeLimit":0.5,"lifo":1}"#
    );
}

#[test]
fn a_delay_too_long_for_duration_is_reported() {
    let job = read_opts(r#"{"delay":1e30,"attempts":2}"#);
    assert_eq!(job.opts.attempts, Some(2));
    assert_eq!(job.invalid_opts.len(), 1);
    assert_eq!(job.invalid_opts[0].key, "delay");
    assert_eq!(job.invalid_opts[0].reason, "1e+30 milliseconds is too long");
}

#[test]
fn deeply_nested_unknown_options_are_kept_within_the_parser_limit() {
    let depth = 100;
    let raw = format!(
        r#"{{"attempts":1,"x":{}1{}}}"#,
        r#"{"a":"#.repeat(depth),
        "}".repeat(depth)
    );
    let job = read_opts(&raw);
    assert!(job.invalid_opts.is_empty());
    let mut v = &job.opts.extra["x"];
    for _ in 0..depth {
        v = &v["a"];
    }
    assert_eq!(*v, json!(1));
    assert_eq!(stored_opts(&job), raw);
}

#[test]
fn options_nested_past_the_parser_limit_are_an_error_naming_opts() {
    let raw = format!(r#"{{"x":{}1{}}}"#, r#"{"a":"#.repeat(300), "}".repeat(300));
    let err = refused("opts", &raw);
    assert!(err.reason.contains("recursion limit exceeded"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Numeric fields
// ---------------------------------------------------------------------------------------------

#[test]
fn timestamp_that_is_not_a_number_is_an_error_naming_timestamp() {
    let err = refused("timestamp", "abc");
    assert_eq!(
        err.to_string(),
        r#"job 1: field `timestamp`: expected an integer, found "abc""#
    );
}

#[test]
fn numbers_with_trailing_junk_are_errors() {
    // Node's parseInt would read "12abc" as 12; we refuse rather than guess.
    for (field, raw) in [
        ("timestamp", "12abc"),
        ("delay", "5ms"),
        ("processedOn", "0x10"),
    ] {
        let err = refused(field, raw);
        assert_eq!(
            err.reason,
            format!("expected an integer, found {raw:?}"),
            "{field}"
        );
    }
}

#[test]
fn numbers_in_exponent_or_fraction_form_are_truncated() {
    let job = read(&[
        ("delay", "1.5e3"),
        ("timestamp", "1.7e+12"),
        ("priority", " 7 "),
        ("processedOn", "1700000000000.9"),
        ("finishedOn", "1.7000000001e+12"),
    ])
    .unwrap();
    assert_eq!(job.delay, Duration::from_millis(1500));
    assert_eq!(job.timestamp, 1_700_000_000_000);
    assert_eq!(job.priority, 7);
    assert_eq!(job.processed_on, Some(1_700_000_000_000));
    assert_eq!(job.finished_on, Some(1_700_000_000_100));
}

#[test]
fn priority_is_read_as_stored_even_negative_and_refused_past_i64() {
    // Node.js stores a negative priority unchecked, and a Node worker runs such a job.
    assert_eq!(read(&[("priority", "-1")]).unwrap().priority, -1);
    // Above PRIORITY_LIMIT is read as stored too: validation is for adding.
    assert_eq!(
        read(&[("priority", "99999999999")]).unwrap().priority,
        99_999_999_999
    );
    let err = refused("priority", "99999999999999999999");
    assert!(
        err.to_string().starts_with("job 1: field `priority`:"),
        "{err}"
    );
    refused("priority", "-x");
}

#[test]
fn negative_and_huge_hash_numbers_are_errors() {
    for (field, raw, reason) in [
        ("timestamp", "-5", r#"expected an integer, found "-5""#),
        ("delay", "1e400", r#"expected an integer, found "1e400""#),
        (
            "processedOn",
            "99999999999999999999",
            r#"expected an integer, found "99999999999999999999""#,
        ),
        ("finishedOn", "inf", r#"expected an integer, found "inf""#),
    ] {
        assert_eq!(refused(field, raw).reason, reason, "{raw}");
    }
    // The largest u64 is fine.
    let job = read(&[("delay", "18446744073709551615")]).unwrap();
    assert_eq!(job.delay, Duration::from_millis(u64::MAX));
}

#[test]
fn counters_read_as_the_scripts_count_them_and_are_never_errors() {
    // A count another runtime garbled must not stop the job from running and finishing: Lua's
    // `tonumber` reads such text as nil (0); the backend rewrites the field before the next
    // script `HINCRBY`s it (`codec::hash_repairs`).
    for (field, raw, count) in [
        ("atm", "abc", 0),
        ("atm", "4294967296", u32::MAX),
        ("atm", "99999999999999999999", u32::MAX),
        ("ats", "-1", 0),
        ("ats", "1.5", 1),
        ("stc", "NaN", 0),
        ("stc", "1 2", 0),
    ] {
        let job = read(&[(field, raw)]).unwrap();
        let got = match field {
            "atm" => job.attempts_made,
            "ats" => job.attempts_started,
            _ => job.stalled_counter,
        };
        assert_eq!(got, count, "{field} = {raw:?}");
        let repairs = bullmq_core::codec::hash_repairs(&[(field, raw)]);
        assert_eq!(repairs.len(), 1, "{field} = {raw:?} is rewritten");
        assert_eq!(repairs[0].value, Some(count.to_string()));
    }
    // What the scripts can count is left alone.
    assert!(bullmq_core::codec::hash_repairs(&[("atm", "7"), ("ats", "0")]).is_empty());
    // A legacy count that is not one is ignored (`atm` is read) and deleted.
    let job = read(&[("atm", "2"), ("attemptsMade", "abc")]).unwrap();
    assert_eq!(job.attempts_made, 2);
    let repairs = bullmq_core::codec::hash_repairs(&[("attemptsMade", "abc")]);
    assert_eq!(repairs[0].value, None);
}

#[test]
fn legacy_attempts_made_wins_when_non_zero() {
    // Upstream: `parseInt(raw.attemptsMade || raw.atm || '0')`.
    let job = read(&[("atm", "2"), ("attemptsMade", "5")]).unwrap();
    assert_eq!(job.attempts_made, 5);
    let job = read(&[("attemptsMade", "5"), ("atm", "2")]).unwrap();
    assert_eq!(job.attempts_made, 5);
    let job = read(&[("attemptsMade", "3")]).unwrap();
    assert_eq!(job.attempts_made, 3);
    let job = read(&[("atm", "4")]).unwrap();
    assert_eq!(job.attempts_made, 4);
    // It is written back under the current name only.
    let hash = job.to_hash();
    assert!(hash.contains(&("atm", "4".to_owned())));
    assert!(hash.iter().all(|(k, _)| *k != "attemptsMade"));
}

#[test]
fn legacy_attempts_made_zero_string_wins_like_node() {
    // `"0" || "2"` is "0" in JavaScript: the hash values are strings.
    let job = read(&[("atm", "2"), ("attemptsMade", "0")]).unwrap();
    assert_eq!(job.attempts_made, 0);
}

// ---------------------------------------------------------------------------------------------
// JSON-valued fields
// ---------------------------------------------------------------------------------------------

#[test]
fn stacktrace_that_is_not_a_json_array_of_strings_reads_as_empty() {
    for raw in [
        "Error: boom\n    at x.js:1",
        "{\"a\":1}",
        "\"trace\"",
        "[1,2]",
    ] {
        let job = read(&[("stacktrace", raw)]).unwrap();
        assert_eq!(job.stacktrace, Vec::<String>::new(), "{raw}");
    }
    let job = read(&[("stacktrace", r#"["a","b\nc"]"#)]).unwrap();
    assert_eq!(job.stacktrace, ["a", "b\nc"]);
}

#[test]
fn returnvalue_that_is_not_json_is_kept_as_text() {
    // The Python bug bullmq#2196 stored raw strings.
    let job = read(&[("returnvalue", "done")]).unwrap();
    assert_eq!(job.return_value.as_deref(), Some("done"));
    assert!(job.return_value_as::<Value>().unwrap().is_err());
    assert!(job.to_hash().contains(&("returnvalue", "done".to_owned())));
    let job = read(&[("returnvalue", r#"{"ok":true}"#)]).unwrap();
    assert_eq!(
        job.return_value_as::<Value>().unwrap().unwrap(),
        json!({"ok": true})
    );
}

#[test]
fn failed_reason_is_raw_text() {
    // Not JSON-decoded (the Python bug bullmq#4596 JSON-encoded it).
    let job = read(&[("failedReason", r#""quoted""#)]).unwrap();
    assert_eq!(job.failed_reason.as_deref(), Some(r#""quoted""#));
}

#[test]
fn progress_that_is_not_json_is_an_error_naming_progress() {
    // Node: `JSON.parse(raw.progress || '0')` throws too.
    let err = refused("progress", "50%");
    assert!(
        err.to_string()
            .starts_with("job 1: field `progress`: not JSON: "),
        "{err}"
    );
    let job = read(&[("progress", r#"{"step":2}"#)]).unwrap();
    assert_eq!(job.progress, json!({"step": 2}));
    let job = read(&[("progress", "42")]).unwrap();
    assert_eq!(job.progress, json!(42));
}

#[test]
fn parent_that_is_not_json_is_an_error_naming_parent() {
    let err = refused("parent", "bull:q:1");
    assert!(
        err.to_string()
            .starts_with("job 1: field `parent`: expected {id, queueKey}: "),
        "{err}"
    );
    // JSON, but without the queue key the scripts need.
    refused("parent", r#"{"id":"1"}"#);
}

#[test]
fn parent_with_failure_flags_is_read() {
    let job = read(&[
        ("parentKey", "bull:p:7"),
        (
            "parent",
            r#"{"id":"7","queueKey":"bull:p","fpof":true,"extra":1}"#,
        ),
    ])
    .unwrap();
    assert_eq!(job.parent_key.as_deref(), Some("bull:p:7"));
    let parent = job.parent.unwrap();
    assert_eq!(parent.id.as_deref(), Some("7"));
    assert_eq!(parent.queue_key, "bull:p");
    assert_eq!(parent.fpof, Some(true));
    assert_eq!(parent.idof, None);
}

// ---------------------------------------------------------------------------------------------
// Unknown fields, ids
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_hash_fields_are_ignored() {
    let with = read(&[
        ("nrjid", "x"),
        ("foo", "{not json"),
        ("id", "999"),
        ("", ""),
    ])
    .unwrap();
    let without = read(&[]).unwrap();
    assert_eq!(with, without);
    // The id is the key's, never a field's.
    assert_eq!(with.id.as_str(), "1");
}

#[test]
fn ids_are_taken_as_they_are() {
    let long = "x".repeat(1024);
    for id in ["0", "123", "a:b", "", "é\u{0}☃", long.as_str()] {
        let job = Job::from_hash(id, hash(&[], &[])).unwrap();
        assert_eq!(job.id.as_str(), id);
    }
}

#[test]
fn string_fields_are_kept_verbatim() {
    let job = read(&[
        ("rjk", "sched-1"),
        ("deid", "d:1"),
        ("pb", "worker-α"),
        ("defa", "job stalled more than allowable limit"),
        ("tm", "{\"traceparent\":\"00-x\"}"),
    ])
    .unwrap();
    assert_eq!(job.repeat_job_key.as_deref(), Some("sched-1"));
    assert_eq!(job.deduplication_id.as_deref(), Some("d:1"));
    assert_eq!(job.processed_by.as_deref(), Some("worker-α"));
    assert_eq!(
        job.deferred_failure.as_deref(),
        Some("job stalled more than allowable limit")
    );
    assert_eq!(
        job.telemetry_metadata.as_deref(),
        Some("{\"traceparent\":\"00-x\"}")
    );
}

// ---------------------------------------------------------------------------------------------
// Empty strings: Node treats them as absent
// ---------------------------------------------------------------------------------------------

#[test]

fn empty_string_fields_read_as_absent_like_node() {
    // rawToJobJson: `raw.data || '{}'`, `JSON.parse(raw.opts || '{}')`,
    // `JSON.parse(raw.progress || '0')`, `raw.parent ? JSON.parse(raw.parent) : undefined`,
    // `parseInt(raw.ats || '0')`, `raw.finishedOn ? parseInt(raw.finishedOn) : undefined`, ...
    let baseline = read(&[]).unwrap();
    let mut failing = Vec::new();
    for field in [
        "data",
        "opts",
        "progress",
        "parent",
        "atm",
        "ats",
        "stc",
        "processedOn",
        "finishedOn",
    ] {
        match read(&[(field, "")]) {
            Ok(job) => {
                let expected_data = if field == "data" {
                    "{}"
                } else {
                    &baseline.data
                };
                let expected_opts = if field == "opts" {
                    JobOptions::default()
                } else {
                    baseline.opts.clone()
                };
                assert_eq!(job.data, expected_data, "{field}");
                assert_eq!(job.opts, expected_opts, "{field}");
                assert_eq!(job.progress, json!(0), "{field}");
                assert_eq!(job.parent, None, "{field}");
                assert_eq!(job.processed_on, None, "{field}");
                assert_eq!(job.finished_on, None, "{field}");
            }
            Err(e) => failing.push(e.to_string()),
        }
    }
    assert!(failing.is_empty(), "{failing:#?}");
}
