//! Every rejection rule of `JobOptions::validate`, `JobOptions::check_data_size`,
//! `JobId::custom`, `QueueName::new` and `Prefix::new`: the exact message and the path of each
//! problem, and the values just inside each rule.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bullmq_core::options::{
    Backoff, Deduplication, KeepJobs, PRIORITY_LIMIT, ParentOptions, Problem, ValidationError,
};
use bullmq_core::{JobId, JobOptions, Prefix, QueueName};
use serde_json::json;

fn paths(err: &ValidationError) -> Vec<&str> {
    err.problems().iter().map(|p| p.path.as_str()).collect()
}

/// Asserts the one-problem error `opts.validate()` returns.
fn rejects(opts: &JobOptions, path: &str, message: &str) {
    let err = opts.validate().unwrap_err();
    assert_eq!(err.subject(), "job options");
    assert_eq!(
        err.to_string(),
        format!("invalid job options: {path}: {message}")
    );
    assert_eq!(
        err.problems(),
        [Problem {
            path: path.to_owned(),
            message: message.to_owned()
        }]
    );
}

fn parent() -> ParentOptions {
    ParentOptions::new("7", "bull:parents")
}

// ---------------------------------------------------------------------------------------------
// priority
// ---------------------------------------------------------------------------------------------

#[test]
fn priority_over_the_limit() {
    rejects(
        &JobOptions::new().priority(PRIORITY_LIMIT + 1),
        "priority",
        "must be between 0 and 2097151 (got 2097152)",
    );
    rejects(
        &JobOptions::new().priority(u32::MAX),
        "priority",
        "must be between 0 and 2097151 (got 4294967295)",
    );
}

#[test]
fn priority_within_the_limit() {
    assert_eq!(PRIORITY_LIMIT, 2_097_151);
    for p in [0, 1, PRIORITY_LIMIT] {
        assert_eq!(JobOptions::new().priority(p).validate(), Ok(()), "{p}");
    }
}

// ---------------------------------------------------------------------------------------------
// backoff
// ---------------------------------------------------------------------------------------------

#[test]
fn backoff_jitter_below_zero() {
    let b = Backoff::fixed(Duration::from_secs(1)).jitter(-0.5);
    rejects(
        &JobOptions::new().backoff(b),
        "backoff.jitter",
        "must be between 0 and 1 (got -0.5)",
    );
}

#[test]
fn backoff_jitter_above_one() {
    let b = Backoff::exponential(Duration::from_secs(1)).jitter(1.5);
    rejects(
        &JobOptions::new().backoff(b),
        "backoff.jitter",
        "must be between 0 and 1 (got 1.5)",
    );
}

#[test]
fn backoff_jitter_nan() {
    let b = Backoff::fixed(Duration::from_secs(1)).jitter(f64::NAN);
    rejects(
        &JobOptions::new().backoff(b),
        "backoff.jitter",
        "must be between 0 and 1 (got NaN)",
    );
}

#[test]
fn backoff_jitter_within_range_and_custom_strategies() {
    for j in [0.0, -0.0, 0.5, 1.0] {
        let b = Backoff::fixed(Duration::from_secs(1)).jitter(j);
        assert_eq!(JobOptions::new().backoff(b).validate(), Ok(()), "{j}");
    }
    let b = Backoff::custom("anything");
    assert_eq!(JobOptions::new().backoff(b).validate(), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// jobId
// ---------------------------------------------------------------------------------------------

/// Each rejected id with the message `JobId::custom` gives; `validate` reports the same
/// message under the path `jobId`.
const BAD_IDS: [(&str, &str); 9] = [
    ("123", r#"custom ids cannot be integers (got "123")"#),
    ("-5", r#"custom ids cannot be integers (got "-5")"#),
    (
        "100000000000000000000",
        r#"custom ids cannot be integers (got "100000000000000000000")"#,
    ),
    ("0", r#"cannot be '0' or start with '0:' (got "0")"#),
    ("0:", r#"cannot be '0' or start with '0:' (got "0:")"#),
    ("0:a:b", r#"cannot be '0' or start with '0:' (got "0:a:b")"#),
    (
        "a:b",
        r#"custom ids cannot contain ':' except in the form 'a:b:c' (got "a:b")"#,
    ),
    (
        "a:b:c:d",
        r#"custom ids cannot contain ':' except in the form 'a:b:c' (got "a:b:c:d")"#,
    ),
    (
        ":",
        r#"custom ids cannot contain ':' except in the form 'a:b:c' (got ":")"#,
    ),
];

/// Ids upstream accepts: not `String(parseInt(id, 10)) === id`, and `:` only in three parts.
const GOOD_IDS: [&str; 12] = [
    "invoice-42",
    "repeat:daily:1700000000000",
    "a:b:",
    "0123",
    "-0",
    "+5",
    " 5",
    "1e3",
    "1.0",
    "9007199254740993",
    "1000000000000000000000",
    "é☃",
];

#[test]
fn job_id_rules_in_validate() {
    for (id, message) in BAD_IDS {
        rejects(&JobOptions::new().job_id(id), "jobId", message);
    }
}

#[test]
fn job_id_rules_in_job_id_custom() {
    for (id, message) in BAD_IDS {
        let err = JobId::custom(id).unwrap_err();
        assert_eq!(err.subject(), "job id");
        assert_eq!(err.to_string(), format!("invalid job id: jobId: {message}"));
        assert_eq!(paths(&err), ["jobId"]);
    }
}

/// docs/RELIABILITY.md I2, decided as Node does (`if (opts.jobId)`): an empty `jobId` option is no
/// custom id, so the store generates one; as a value of its own, an empty id is not an id.
#[test]
fn empty_job_id_means_no_custom_id() {
    assert_eq!(JobOptions::new().job_id("").validate(), Ok(()));
    let err = JobId::custom("").unwrap_err();
    assert_eq!(err.to_string(), "invalid job id: jobId: must not be empty");
}

#[test]
fn accepted_job_ids() {
    for id in GOOD_IDS {
        assert_eq!(JobId::custom(id).unwrap().as_str(), id);
        assert_eq!(JobOptions::new().job_id(id).validate(), Ok(()), "{id:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Parent-failure options
// ---------------------------------------------------------------------------------------------

#[test]
fn two_exclusive_parent_failure_options() {
    rejects(
        &JobOptions::new()
            .fail_parent_on_failure(true)
            .ignore_dependency_on_failure(true),
        "failParentOnFailure",
        "cannot be used together with ignoreDependencyOnFailure",
    );
}

#[test]
fn four_exclusive_parent_failure_options() {
    rejects(
        &JobOptions::new()
            .fail_parent_on_failure(true)
            .continue_parent_on_failure(true)
            .ignore_dependency_on_failure(true)
            .remove_dependency_on_failure(true),
        "removeDependencyOnFailure",
        "cannot be used together with failParentOnFailure, continueParentOnFailure, ignoreDependencyOnFailure",
    );
}

#[test]
fn one_parent_failure_option_or_several_set_to_false() {
    let one = JobOptions::new()
        .parent(parent())
        .continue_parent_on_failure(true);
    assert_eq!(one.validate(), Ok(()));
    // Upstream filters with `this.opts[opt]`: an explicit false does not count.
    let falses = JobOptions::new()
        .fail_parent_on_failure(true)
        .continue_parent_on_failure(false)
        .ignore_dependency_on_failure(false)
        .remove_dependency_on_failure(false);
    assert_eq!(falses.validate(), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// Deduplication and parent
// ---------------------------------------------------------------------------------------------

#[test]
fn deduplication_together_with_parent() {
    rejects(
        &JobOptions::new()
            .deduplication(Deduplication::new("d"))
            .parent(parent()),
        "deduplication",
        "cannot be used together with parent",
    );
}

#[test]
fn deduplication_with_empty_id() {
    rejects(
        &JobOptions::new().deduplication(Deduplication::new("")),
        "deduplication.id",
        "length is lower than 1",
    );
}

#[test]
fn parent_with_empty_id_and_queue() {
    let err = JobOptions::new()
        .parent(ParentOptions::new("", ""))
        .validate()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid job options: parent.id: length is lower than 1; parent.queue: length is lower than 1"
    );
    assert_eq!(paths(&err), ["parent.id", "parent.queue"]);
    rejects(
        &JobOptions::new().parent(ParentOptions::new("", "bull:q")),
        "parent.id",
        "length is lower than 1",
    );
    rejects(
        &JobOptions::new().parent(ParentOptions::new("1", "")),
        "parent.queue",
        "length is lower than 1",
    );
}

#[test]
fn deduplication_and_parent_alone_are_valid() {
    let dedup = Deduplication::new("d")
        .ttl(Duration::from_secs(5))
        .extend(true)
        .replace(true)
        .reschedule(true)
        .keep_last_if_active(true);
    assert_eq!(JobOptions::new().deduplication(dedup).validate(), Ok(()));
    assert_eq!(JobOptions::new().parent(parent()).validate(), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// KeepJobs
// ---------------------------------------------------------------------------------------------

#[test]
fn keep_jobs_policy_without_age_or_count() {
    let empty = KeepJobs::Policy {
        age: None,
        count: None,
        limit: None,
    };
    rejects(
        &JobOptions::new().remove_on_complete(empty.clone()),
        "removeOnComplete",
        "the object form needs `age` or `count`",
    );
    rejects(
        &JobOptions::new().remove_on_fail(empty),
        "removeOnFail",
        "the object form needs `age` or `count`",
    );
    // A limit alone still lacks both.
    rejects(
        &JobOptions::new().remove_on_fail(KeepJobs::Policy {
            age: None,
            count: None,
            limit: Some(10),
        }),
        "removeOnFail",
        "the object form needs `age` or `count`",
    );
}

#[test]
fn keep_jobs_policy_with_limit_but_no_age() {
    rejects(
        &JobOptions::new().remove_on_complete(KeepJobs::Policy {
            age: None,
            count: Some(100),
            limit: Some(10),
        }),
        "removeOnComplete",
        "`limit` only applies together with `age`",
    );
}

#[test]
fn keep_jobs_valid_forms() {
    for keep in [
        KeepJobs::RemoveAll,
        KeepJobs::KeepAll,
        KeepJobs::Number(0),
        KeepJobs::policy_count(10),
        KeepJobs::policy_age(Duration::from_secs(3600)),
        KeepJobs::Policy {
            age: Some(Duration::from_secs(60)),
            count: Some(5),
            limit: Some(100),
        },
    ] {
        let opts = JobOptions::new()
            .remove_on_complete(keep.clone())
            .remove_on_fail(keep.clone());
        assert_eq!(opts.validate(), Ok(()), "{keep:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// debounce
// ---------------------------------------------------------------------------------------------

#[test]
fn debounce_in_extra_is_rejected() {
    let mut opts = JobOptions::new();
    opts.extra.insert("debounce".into(), json!({"id": "d"}));
    rejects(
        &opts,
        "debounce",
        "was removed in BullMQ 6; use deduplication",
    );
}

#[test]
fn other_unknown_options_are_accepted() {
    let mut opts = JobOptions::new();
    opts.extra.insert("Debounce".into(), json!(1));
    opts.extra.insert("de_bounce".into(), json!(1));
    assert_eq!(opts.validate(), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// sizeLimit
// ---------------------------------------------------------------------------------------------

#[test]
fn data_over_the_size_limit() {
    let opts = JobOptions::new().size_limit(8);
    let err = opts
        .check_data_size("resize", r#"{"a":"long"}"#)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid job options: sizeLimit: the data of job resize is 12 bytes, over the limit of 8"
    );
    assert_eq!(paths(&err), ["sizeLimit"]);
    assert_eq!(err.subject(), "job options");
}

#[test]
fn data_size_counts_utf8_bytes() {
    // `"é☃"` is 2 + 2 + 3 = 7 bytes but 4 chars.
    let data = r#""é☃""#;
    assert_eq!(data.len(), 7);
    assert_eq!(
        JobOptions::new().size_limit(7).check_data_size("n", data),
        Ok(())
    );
    let err = JobOptions::new()
        .size_limit(6)
        .check_data_size("n", data)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid job options: sizeLimit: the data of job n is 7 bytes, over the limit of 6"
    );
}

#[test]
fn data_exactly_at_the_size_limit_or_without_one() {
    let data = r#"{"a":1}"#;
    assert_eq!(
        JobOptions::new().size_limit(7).check_data_size("n", data),
        Ok(())
    );
    assert_eq!(
        JobOptions::new().check_data_size("n", &"x".repeat(1 << 20)),
        Ok(())
    );
    // validate() does not look at the data.
    assert_eq!(JobOptions::new().size_limit(1).validate(), Ok(()));
}

#[test]

fn size_limit_zero_disables_the_check_like_node() {
    assert_eq!(
        JobOptions::new().size_limit(0).check_data_size("n", "{}"),
        Ok(())
    );
}

// ---------------------------------------------------------------------------------------------
// Several problems at once
// ---------------------------------------------------------------------------------------------

#[test]
fn several_problems_are_all_listed() {
    let mut opts = JobOptions::new()
        .job_id("42")
        .priority(3_000_000)
        .backoff(Backoff::fixed(Duration::from_secs(1)).jitter(2.0))
        .remove_on_fail(KeepJobs::Policy {
            age: None,
            count: None,
            limit: None,
        })
        .parent(ParentOptions::new("", "bull:q"))
        .fail_parent_on_failure(true)
        .continue_parent_on_failure(true)
        .deduplication(Deduplication::new(""));
    opts.extra.insert("debounce".into(), json!({}));
    let err = opts.validate().unwrap_err();
    // garde's checks come first (ordered by path), then the cross-field checks.
    assert_eq!(
        paths(&err),
        [
            "backoff.jitter",
            "deduplication.id",
            "parent.id",
            "priority",
            "jobId",
            "removeOnFail",
            "failParentOnFailure",
            "deduplication",
            "debounce",
        ]
    );
    assert_eq!(
        err.to_string(),
        "invalid job options: \
         backoff.jitter: must be between 0 and 1 (got 2); \
         deduplication.id: length is lower than 1; \
         parent.id: length is lower than 1; \
         priority: must be between 0 and 2097151 (got 3000000); \
         jobId: custom ids cannot be integers (got \"42\"); \
         removeOnFail: the object form needs `age` or `count`; \
         failParentOnFailure: cannot be used together with continueParentOnFailure; \
         deduplication: cannot be used together with parent; \
         debounce: was removed in BullMQ 6; use deduplication"
    );
}

#[test]
fn every_option_set_validly_passes() {
    let opts = JobOptions::new()
        .attempts(5)
        .job_id("order-1")
        .created_at(1_700_000_000_000_u64)
        .priority(10)
        .delay(Duration::from_secs(1))
        .backoff(Backoff::exponential(Duration::from_secs(1)).jitter(0.5))
        .lifo(true)
        .remove_on_complete(KeepJobs::Number(100))
        .remove_on_fail(KeepJobs::policy_age(Duration::from_secs(86_400)))
        .keep_logs(10)
        .stack_trace_limit(3)
        .size_limit(1024)
        .parent(parent())
        .fail_parent_on_failure(true)
        .prev_run_at(1_u64);
    assert_eq!(opts.validate(), Ok(()));
    assert_eq!(JobOptions::new().validate(), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// Queue names and prefixes
// ---------------------------------------------------------------------------------------------

#[test]
fn queue_names_and_prefixes_are_refused_with_one_problem_and_its_message() {
    let queue_name = |name: &str| QueueName::new(name).map(drop);
    let prefix = |prefix: &str| Prefix::new(prefix).map(drop);
    // (the value, what it was read as, the error's subject, the problem's path, the message)
    let cases = [
        (
            "",
            queue_name(""),
            "queue name",
            "name",
            "invalid queue name: name: must not be empty",
        ),
        (
            "a:b",
            queue_name("a:b"),
            "queue name",
            "name",
            r#"invalid queue name: name: must not contain ':' (got "a:b")"#,
        ),
        (
            "",
            prefix(""),
            "prefix",
            "prefix",
            "invalid prefix: prefix: must not be empty",
        ),
        (
            "a b",
            prefix("a b"),
            "prefix",
            "prefix",
            r#"invalid prefix: prefix: must not contain whitespace or control characters (found ' ' in "a b")"#,
        ),
        (
            "tab\t",
            prefix("tab\t"),
            "prefix",
            "prefix",
            r#"invalid prefix: prefix: must not contain whitespace or control characters (found '\t' in "tab\t")"#,
        ),
        (
            "nul\0x",
            prefix("nul\0x"),
            "prefix",
            "prefix",
            r#"invalid prefix: prefix: must not contain whitespace or control characters (found '\0' in "nul\0x")"#,
        ),
    ];
    for (value, read, subject, path, message) in cases {
        let err = read.expect_err(&format!("{value:?} accepted"));
        assert_eq!(err.to_string(), message, "{value:?}");
        assert_eq!(err.subject(), subject, "{value:?}");
        assert_eq!(paths(&err), [path], "{value:?}");
    }
    // Unicode whitespace too.
    assert!(Prefix::new("a\u{a0}b").is_err());
}

#[test]
fn queue_names_accepted() {
    for name in ["emails", "{tagged}", "a-b_c.d", "é☃"] {
        assert_eq!(QueueName::new(name).unwrap().as_str(), name);
    }
}

#[test]

fn queue_name_rejects_control_characters_and_unbalanced_braces() {
    for name in ["a\nb", "tab\t", "nul\0", "{open", "close}"] {
        assert!(QueueName::new(name).is_err(), "{name:?} accepted");
    }
}

#[test]
fn prefixes_accepted() {
    for prefix in ["bull", "{bull}", "app:bull", "é"] {
        assert_eq!(Prefix::new(prefix).unwrap().as_str(), prefix);
    }
    assert_eq!(Prefix::default().as_str(), "bull");
}

#[test]

fn prefix_rejects_unbalanced_braces() {
    for prefix in ["{bull", "bull}", "}{"] {
        assert!(Prefix::new(prefix).is_err(), "{prefix:?} accepted");
    }
}
