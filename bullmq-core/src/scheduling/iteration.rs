//! The next iteration of a job scheduler, computed as Node.js's
//! `JobScheduler#upsertJobScheduler` computes it, both when a producer upserts a scheduler and
//! when a worker takes one of its jobs: when it runs, and the options of the job it creates.

use std::time::Duration;

use bullmq_cron::CronError;

use super::next_run::truthy;
use super::{RepeatOptions, next_cron_millis};
use crate::JobId;
use crate::codec;
use crate::options::{JobOptions, KeyOrder, UnixMillis};

/// The keys Node.js sets on an iteration's options, in the order it sets them: `repeat` and
/// `telemetry` by `upsertJobScheduler`, the rest by `getNextJobOpts`. Those the options have
/// already keep their place; the others are appended in this order.
const ITERATION_KEYS: [&str; 7] = [
    "repeat",
    "telemetry",
    "jobId",
    "delay",
    "timestamp",
    "prevMillis",
    "repeatJobKey",
];

/// The keys `getNextJobOpts` sets on an iteration's `repeat`, likewise. `count` comes first:
/// since 6.7.6 Node's `Queue#upsertJobScheduler` passes the schedule on with `count` unset
/// (appended, so it stays before `offset`); a worker's schedule already holds it.
const REPEAT_ITERATION_KEYS: [&str; 4] = ["count", "offset", "startDate", "endDate"];

/// What the next iteration is.
#[derive(Debug, Clone, PartialEq)]
pub struct IterationPlan {
    /// When it runs (Unix ms); `None` for `every`, whose slot the store's script computes
    /// (from the previous slot, `offset` and `startDate`), as in Node.js.
    pub next_millis: Option<u64>,
    /// The options of the job to create: the template's plus `jobId`, `delay`, `timestamp`,
    /// `prevMillis`, `repeatJobKey` and `repeat` (with `count` and `offset`).
    pub delayed_job_opts: JobOptions,
}

/// Plans the next iteration of scheduler `scheduler_id` with Node's default repeat strategy
/// ([`next_cron_millis`]); see [`plan_iteration_with`].
///
/// # Errors
///
/// An invalid pattern or time zone.
pub fn plan_iteration(
    scheduler_id: &str,
    schedule: &RepeatOptions,
    job_opts: &JobOptions,
    now: u64,
) -> Result<Option<IterationPlan>, CronError> {
    plan_iteration_with(scheduler_id, schedule, job_opts, now, |from| {
        next_cron_millis(schedule, from, from)
    })
}

/// Plans the next iteration of scheduler `scheduler_id`: `schedule` is the repeat options (a
/// job's `opts.repeat` when a worker advances it), `job_opts` the template's options (the
/// taken job's options for a worker, whose `prevMillis` is the slot that just ran), `now` the
/// clock, and `next_run` gives a cron pattern's next run after a time (upstream's
/// `repeatStrategy`).
///
/// `Ok(None)` when the schedule is over: its `limit` reached, its end date passed, or no
/// further cron run.
///
/// # Errors
///
/// Whatever `next_run` returns (an invalid pattern or time zone).
pub fn plan_iteration_with(
    scheduler_id: &str,
    schedule: &RepeatOptions,
    job_opts: &JobOptions,
    now: u64,
    next_run: impl FnOnce(u64) -> Result<Option<u64>, CronError>,
) -> Result<Option<IterationPlan>, CronError> {
    let iteration = schedule
        .count
        .filter(|c| *c != 0)
        .map_or(1, |c| c.saturating_add(1));
    if schedule.limit.is_some_and(|limit| iteration > limit) {
        return Ok(None);
    }
    let (start_date, end_date) = (
        truthy(schedule.start_at().map(UnixMillis::get)),
        truthy(schedule.end_at().map(UnixMillis::get)),
    );
    if end_date.is_some_and(|end| now > end) {
        return Ok(None);
    }
    let created = now;
    // As upstream: never before the slot that just ran.
    let from = now.max(job_opts.prev_millis.unwrap_or_default());
    let every = schedule.every.filter(|e| !e.is_zero());
    let offset = every.and(schedule.offset).filter(|o| !o.is_zero());
    let next_millis = if every.is_some() {
        None
    } else {
        match next_run(from)? {
            Some(next) => Some(next.max(from)),
            None => return Ok(None),
        }
    };

    let mut opts = job_opts.clone();
    opts.key_order = iteration_order(job_opts, schedule);
    // `repeatJobKey` has no slot of its own in `JobOptions`: it travels as an extra key.
    opts.extra.insert(
        "repeatJobKey".to_owned(),
        serde_json::Value::String(scheduler_id.to_owned()),
    );
    // For `every` the store computes the slot and replaces the id; Node.js sends
    // `repeat:<id>:undefined` in its place, and so do we: the key's presence decides where the
    // store writes the real one.
    let slot = next_millis.map_or_else(|| "undefined".to_owned(), |n| n.to_string());
    opts.job_id = Some(JobId::from(format!("repeat:{scheduler_id}:{slot}")));
    // As in Node.js, the delay and timestamp are read from the clock, not from `prevMillis`.
    let delay = next_millis.map_or(0, |n| {
        (n + offset.map_or(0, duration_ms)).saturating_sub(created)
    });
    opts.delay = Some(Duration::from_millis(delay));
    opts.timestamp = Some(created);
    opts.prev_millis = next_millis;
    // Node's `getNextJobOpts` writes the dates as numbers, 0 as none.
    #[allow(deprecated)]
    let repeat = RepeatOptions {
        immediately: None,
        offset,
        count: Some(iteration),
        start_date,
        end_date,
        ..schedule.clone()
    };
    opts.repeat = Some(repeat);
    Ok(Some(IterationPlan {
        next_millis,
        delayed_job_opts: opts,
    }))
}

/// The order Node.js gives an iteration's options: those of the job (or template) it comes
/// from in their order (`repeatJobKey` taken out; a job read back has `attempts` first, as
/// [`JobOptions::with_node_defaults`] leaves it, while a template keeps its caller's order),
/// then [`ITERATION_KEYS`]; in `repeat`, the schedule's keys in their order but
/// `immediately`, then [`REPEAT_ITERATION_KEYS`].
fn iteration_order(job_opts: &JobOptions, schedule: &RepeatOptions) -> KeyOrder {
    let read = codec::written_order(job_opts);
    let mut order = KeyOrder::default();
    for key in read.keys().filter(|k| *k != "repeatJobKey") {
        order.push(key, read.child(key).cloned().unwrap_or_default());
    }
    for key in ITERATION_KEYS {
        order.push(key, KeyOrder::default());
    }
    let mut repeat = match read.child("repeat").filter(|c| !c.is_empty()) {
        Some(stored) => stored.clone(),
        None => codec::written_repeat_order(schedule),
    };
    repeat.remove("immediately");
    for key in REPEAT_ITERATION_KEYS {
        repeat.push(key, KeyOrder::default());
    }
    order.set_child("repeat", repeat);
    order
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn cron(pattern: &str) -> RepeatOptions {
        RepeatOptions {
            pattern: Some(pattern.into()),
            tz: Some("UTC".into()),
            ..RepeatOptions::default()
        }
    }

    #[test]
    fn a_cron_iteration_runs_at_the_next_slot_after_the_previous_one() {
        // 2024-01-01T00:00:00.500Z; the previous slot ran at 00:00:02, later than the clock.
        let now = 1_704_067_200_500;
        let opts = JobOptions {
            prev_millis: Some(1_704_067_202_000),
            ..JobOptions::default()
        };
        let plan = plan_iteration("s", &cron("*/1 * * * * *"), &opts, now)
            .unwrap()
            .unwrap();
        assert_eq!(plan.next_millis, Some(1_704_067_203_000));
        let next = plan.delayed_job_opts;
        assert_eq!(next.job_id.unwrap().as_str(), "repeat:s:1704067203000");
        assert_eq!(next.delay, Some(Duration::from_millis(2_500)));
        assert_eq!(
            (next.timestamp, next.prev_millis),
            (Some(now), plan.next_millis)
        );
        assert_eq!(next.repeat.unwrap().count, Some(1));
        assert_eq!(next.extra["repeatJobKey"], "s");
    }

    #[test]
    fn the_limit_and_the_end_date_end_a_schedule() {
        let limited = RepeatOptions {
            limit: Some(3),
            count: Some(3),
            ..cron("* * * * *")
        };
        let opts = JobOptions::default();
        assert_eq!(plan_iteration("s", &limited, &opts, 1_000).unwrap(), None);
        let ended = cron("* * * * *").end_date(999_u64);
        assert_eq!(plan_iteration("s", &ended, &opts, 1_000).unwrap(), None);
    }

    #[test]
    fn every_leaves_the_slot_to_the_store_and_keeps_a_non_zero_offset() {
        let every = RepeatOptions {
            every: Some(Duration::from_secs(5)),
            offset: Some(Duration::from_millis(300)),
            count: Some(4),
            ..RepeatOptions::default()
        };
        let plan = plan_iteration("s", &every, &JobOptions::default(), 1_000)
            .unwrap()
            .unwrap();
        assert_eq!(plan.next_millis, None);
        assert_eq!(
            plan.delayed_job_opts.job_id.unwrap().as_str(),
            "repeat:s:undefined"
        );
        let repeat = plan.delayed_job_opts.repeat.unwrap();
        assert_eq!(
            (repeat.count, repeat.offset),
            (Some(5), Some(Duration::from_millis(300)))
        );
    }

    #[test]
    fn an_iteration_has_nodes_keys_in_nodes_order() {
        use crate::codec::{self, KeyStyle};
        let now = 1_704_067_200_500;
        let template = JobOptions::new().priority(3);
        let plan = plan_iteration("s", &cron("* * * * *"), &template, now)
            .unwrap()
            .unwrap();
        // Upsert: the template's keys, then those Node sets; `count` before `offset` (6.7.6's
        // `Queue` appends it unset), `offset` null, no dates.
        assert_eq!(
            codec::options_to_json(&plan.delayed_job_opts, KeyStyle::Long),
            r#"{"priority":3,"repeat":{"pattern":"* * * * *","tz":"UTC","count":1,"offset":null},"jobId":"repeat:s:1704067260000","delay":59500,"timestamp":1704067200500,"prevMillis":1704067260000,"repeatJobKey":"s"}"#
        );
        // Advance: the stored job's own order, `attempts` first and `repeatJobKey` appended.
        let stored = r#"{"timestamp":1,"prevMillis":1704067260000,"repeatJobKey":"s","jobId":"x","repeat":{"tz":"UTC","count":1,"pattern":"* * * * *"},"delay":2,"priority":3}"#;
        let job_opts = codec::options_from_json(stored)
            .unwrap()
            .options
            .with_node_defaults();
        let repeat = job_opts.repeat.clone().unwrap();
        let plan = plan_iteration("s", &repeat, &job_opts, now)
            .unwrap()
            .unwrap();
        assert_eq!(
            codec::options_to_json(&plan.delayed_job_opts, KeyStyle::Long),
            r#"{"attempts":0,"timestamp":1704067200500,"prevMillis":1704067320000,"jobId":"repeat:s:1704067320000","repeat":{"tz":"UTC","count":2,"pattern":"* * * * *","offset":null},"delay":119500,"priority":3,"repeatJobKey":"s"}"#
        );
    }

    #[test]
    fn a_callers_order_reaches_the_iteration() {
        use crate::codec::{self, KeyStyle};
        use crate::options::Backoff;
        let now = 1_704_067_200_500;
        // Set in the order a Node.js caller writes `{pattern, tz, limit, endDate}` and a
        // template's `{priority, attempts, backoff}`: a template is not built by Node's `Job`
        // constructor, so `attempts` keeps its place.
        let schedule = RepeatOptions::new()
            .pattern("* * * * *")
            .tz("UTC")
            .limit(9)
            .end_date(1_804_067_200_000_u64);
        let template = JobOptions::new()
            .priority(3)
            .attempts(2)
            .backoff(Backoff::fixed(Duration::from_millis(5)));
        let plan = plan_iteration("s", &schedule, &template, now)
            .unwrap()
            .unwrap();
        assert_eq!(
            codec::options_to_json(&plan.delayed_job_opts, KeyStyle::Long),
            r#"{"priority":3,"attempts":2,"backoff":{"type":"fixed","delay":5},"repeat":{"pattern":"* * * * *","tz":"UTC","limit":9,"endDate":1804067200000,"count":1,"offset":null},"jobId":"repeat:s:1704067260000","delay":59500,"timestamp":1704067200500,"prevMillis":1704067260000,"repeatJobKey":"s"}"#
        );
        // Another order of the same keys: other bytes, as in Node.js.
        let other = RepeatOptions::new()
            .limit(9)
            .tz("UTC")
            .end_date(1_804_067_200_000_u64)
            .pattern("* * * * *");
        let plan = plan_iteration("s", &other, &JobOptions::new(), now)
            .unwrap()
            .unwrap();
        let repeat =
            codec::options_to_value(&plan.delayed_job_opts, KeyStyle::Long)["repeat"].clone();
        let keys: Vec<&String> = repeat.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["limit", "tz", "endDate", "pattern", "count", "offset"]
        );
    }

    #[test]
    fn a_custom_strategy_and_its_errors_are_used_as_given() {
        let schedule = cron("* * * * *");
        let plan = plan_iteration_with("s", &schedule, &JobOptions::default(), 10, |_| Ok(Some(5)))
            .unwrap()
            .unwrap();
        // Never before the clock.
        assert_eq!(plan.next_millis, Some(10));
        let bad = plan_iteration("s", &cron("61 * * * *"), &JobOptions::default(), 10);
        assert!(bad.is_err());
    }
}
