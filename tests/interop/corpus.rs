//! The Rust side of `tests/node/opts-corpus.mjs`: the typed value each option set must be.

use std::time::Duration;

use bullmq::JobOptions;
use bullmq::options::{Backoff, Deduplication, KeepJobs, ParentOptions, Telemetry};
use bullmq_core::scheduling::RepeatOptions;
use serde_json::{Value, json};

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Options Node accepts unchecked but that lie outside our typed domain (negative or ≥ 2^32
/// counts, negative delays): kept verbatim in `extra`, reported as invalid.
pub fn raw(opts: JobOptions, key: &str, value: Value) -> JobOptions {
    let mut opts = opts;
    opts.extra.insert(key.to_owned(), value);
    opts
}

/// The typed value each corpus case must decode to, built as `Queue::add` hands options to
/// the store: setters in the order the Node.js case writes its keys, then
/// [`JobOptions::with_node_defaults`] (`attempts` first, as Node's `Job` constructor puts it).
#[allow(clippy::too_many_lines)]
pub fn expected(name: &str, parent: &ParentOptions) -> Option<JobOptions> {
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
        "timestamp" => o().created_at(1_700_000_000_000_u64),
        "jobid-timestamp-delay" => o()
            .job_id("custom-delayed")
            .created_at(1_700_000_000_123_u64)
            .delay(ms(60_000)),
        "roc-true" => o().remove_on_complete(KeepJobs::RemoveAll),
        "roc-false" => o().remove_on_complete(KeepJobs::KeepAll),
        "roc-number" => o().remove_on_complete(KeepJobs::Number(100)),
        "roc-count" => o().remove_on_complete(KeepJobs::policy_count(10)),
        "roc-age" => o().remove_on_complete(KeepJobs::policy_age(secs(3600))),
        "roc-age-count-limit" => o().remove_on_complete(KeepJobs::Policy {
            age: Some(secs(86_400)),
            count: Some(1000),
            limit: Some(50),
        }),
        "rof-true" => o().remove_on_fail(KeepJobs::RemoveAll),
        "rof-false" => o().remove_on_fail(KeepJobs::KeepAll),
        "rof-number" => o().remove_on_fail(KeepJobs::Number(500)),
        "rof-count" => o().remove_on_fail(KeepJobs::policy_count(0)),
        "rof-age" => o().remove_on_fail(KeepJobs::policy_age(secs(604_800))),
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
            .created_at(1_700_000_000_000_u64)
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
            .remove_on_fail(KeepJobs::policy_count(100)),
        "combo-everything-but-parent" => raw(
            JobOptions::new()
                .job_id("combo-1")
                .created_at(1_700_000_000_000_u64)
                .priority(2_097_151)
                .delay(ms(1_234_567_890_123_456))
                .backoff(Backoff::exponential(Duration::from_micros(1500)).jitter(0.25))
                .lifo(true)
                .remove_on_complete(KeepJobs::Policy {
                    age: Some(secs(3600)),
                    count: Some(10),
                    limit: Some(5),
                })
                .remove_on_fail(KeepJobs::Number(7))
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
        )
        .with_node_defaults(),
        "combo-parent" => o()
            .job_id("child-1")
            .priority(3)
            .attempts(2)
            .backoff(Backoff::fixed(ms(250)))
            .remove_on_complete(KeepJobs::KeepAll)
            .remove_on_fail(KeepJobs::policy_age(Duration::from_millis(1500)))
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
        )
        .with_node_defaults(),
        _ => return None,
    })
}
