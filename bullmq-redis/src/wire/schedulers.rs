//! The calls of the `Schedulers` scripts (`addJobScheduler`, `updateJobScheduler`,
//! `removeJobScheduler`, `getJobScheduler`), keys and arguments in upstream's order, and
//! `ARGV[2]` of `addJobScheduler`: the schedule the script stores in the scheduler hash.
//!
//! The template and iteration options travel as ordinary packed job options
//! (`bullmq_core::codec::options_to_msgpack`); only the schedule has a shape of its own.

use bullmq_core::Result;
use bullmq_core::backend::{AddJobSchedulerArgs, NextIterationArgs};
use bullmq_core::codec::{self, CodecError, WireMap, WireValue, pack_msgpack};
use bullmq_core::options::UnixMillis;
use bullmq_core::scheduling::{RepeatOptions, truthy};

use crate::keys::QueueKeys;
use crate::script::ScriptCall;

/// The producer job's key, or the empty key Node.js sends when there is none.
fn producer_key(k: &QueueKeys, producer_id: &str) -> String {
    if producer_id.is_empty() {
        String::new()
    } else {
        k.job(producer_id)
    }
}

/// The first ten keys of `addJobScheduler`, which `updateJobScheduler` shares in the same
/// order: both may add the next iteration to any of the job states.
fn iteration_keys(k: &QueueKeys) -> ScriptCall {
    ScriptCall::default()
        .key(&k.repeat)
        .key(&k.delayed)
        .key(&k.wait)
        .key(&k.paused)
        .key(&k.meta)
        .key(&k.prioritized)
        .key(&k.marker)
        .key(&k.id)
        .key(&k.events)
        .key(&k.priority_counter)
}

/// `addJobScheduler`: the scheduler stored and its first iteration added, at `now_ms`.
pub(crate) fn add_job_scheduler(
    k: &QueueKeys,
    args: &AddJobSchedulerArgs,
    now_ms: u64,
) -> Result<ScriptCall> {
    let schedule = pack_job_scheduler_opts(&args.template_name, &args.schedule)?;
    let template_opts = codec::options_to_msgpack(&args.template_opts)?;
    let delayed_opts = codec::options_to_msgpack(&args.delayed_job_opts)?;
    let producer = producer_key(k, args.producer_id.as_deref().unwrap_or_default());
    Ok(iteration_keys(k)
        .key(&k.active)
        .arg(args.next_millis)
        .arg(schedule)
        .arg(&args.scheduler_id)
        .arg(&args.template_data)
        .arg(template_opts)
        .arg(delayed_opts)
        .arg(now_ms)
        .arg(&k.job_prefix)
        .arg(producer))
}

/// `updateJobScheduler`: the scheduler's next iteration added, at `now_ms`.
pub(crate) fn update_job_scheduler(
    k: &QueueKeys,
    args: &NextIterationArgs,
    now_ms: u64,
) -> Result<ScriptCall> {
    let producer_id = args.producer_id.as_deref().unwrap_or_default();
    let delayed_opts = codec::options_to_msgpack(&args.delayed_job_opts)?;
    Ok(iteration_keys(k)
        .key(producer_key(k, producer_id))
        .key(&k.active)
        .arg(args.next_millis)
        .arg(&args.scheduler_id)
        .arg(&args.template_data)
        .arg(delayed_opts)
        .arg(now_ms)
        .arg(&k.job_prefix)
        .arg(producer_id))
}

/// `removeJobScheduler`: the scheduler and its pending iteration removed.
pub(crate) fn remove_job_scheduler(k: &QueueKeys, scheduler_id: &str) -> ScriptCall {
    ScriptCall::default()
        .key(&k.repeat)
        .key(&k.delayed)
        .key(&k.events)
        .arg(scheduler_id)
        .arg(&k.job_prefix)
}

/// `getJobScheduler`: the scheduler's hash and next run.
pub(crate) fn get_job_scheduler(k: &QueueKeys, scheduler_id: &str) -> ScriptCall {
    ScriptCall::default().key(&k.repeat).arg(scheduler_id)
}

/// Packs `ARGV[2]` of `addJobScheduler`.
///
/// Node.js always sends the same eight keys in the same order (`name`, `startDate`, `endDate`,
/// `tz`, `pattern`, `every`, `limit`, `offset`), writing the ones it has no value for as nil;
/// so do we, which keeps the bytes identical. The caller's order of the schedule's keys
/// ([`RepeatOptions::key_order`]) does not reach this map: Node builds it key by key; it
/// reaches the `repeat` options of the iteration's job instead. As in Node.js, `offset` is only sent alongside
/// `every`, and a zero offset or date counts as none.
pub(crate) fn pack_job_scheduler_opts(
    name: &str,
    schedule: &RepeatOptions,
) -> Result<Vec<u8>, CodecError> {
    let offset = schedule
        .every
        .and(schedule.offset)
        .filter(|o| !o.is_zero())
        .map(WireValue::millis);
    let mut m = WireMap::default();
    m.push("name", WireValue::text(name));
    m.push(
        "startDate",
        WireValue::or_nil(truthy(schedule.start_at().map(UnixMillis::get)).map(WireValue::UInt)),
    );
    m.push(
        "endDate",
        WireValue::or_nil(truthy(schedule.end_at().map(UnixMillis::get)).map(WireValue::UInt)),
    );
    m.push(
        "tz",
        WireValue::or_nil(schedule.tz.as_deref().map(WireValue::text)),
    );
    m.push(
        "pattern",
        WireValue::or_nil(schedule.pattern.as_deref().map(WireValue::text)),
    );
    m.push(
        "every",
        WireValue::or_nil(schedule.every.map(WireValue::millis)),
    );
    m.push(
        "limit",
        WireValue::or_nil(schedule.limit.map(WireValue::UInt)),
    );
    m.push("offset", WireValue::or_nil(offset));
    pack_msgpack("job scheduler options", &WireValue::Map(m))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_schedule_packs_eight_entries_with_nils() {
        let schedule = RepeatOptions {
            every: Some(Duration::from_millis(1000)),
            offset: Some(Duration::from_millis(250)),
            ..RepeatOptions::default()
        };
        let bytes = pack_job_scheduler_opts("n", &schedule).unwrap();
        let mut expected = vec![0xde, 0x00, 0x08];
        let mut entry = |k: &str, v: &[u8]| {
            rmp::encode::write_str(&mut expected, k).unwrap();
            expected.extend_from_slice(v);
        };
        entry("name", &[0xa1, b'n']);
        entry("startDate", &[0xc0]);
        entry("endDate", &[0xc0]);
        entry("tz", &[0xc0]);
        entry("pattern", &[0xc0]);
        entry("every", &[0xcd, 0x03, 0xe8]);
        entry("limit", &[0xc0]);
        entry("offset", &[0xcc, 0xfa]);
        assert_eq!(bytes, expected);
    }

    #[test]
    fn the_callers_order_does_not_reach_the_scheduler_hash() {
        let given = RepeatOptions::new()
            .limit(3)
            .tz("UTC")
            .pattern("* * * * *")
            .end_date(9_u64);
        let fixed = RepeatOptions::cron("* * * * *")
            .tz("UTC")
            .limit(3)
            .end_date(9_u64);
        assert_eq!(
            pack_job_scheduler_opts("n", &given).unwrap(),
            pack_job_scheduler_opts("n", &fixed).unwrap()
        );
    }

    #[test]
    fn offset_without_every_is_not_sent() {
        let schedule = RepeatOptions {
            pattern: Some("* * * * *".to_owned()),
            offset: Some(Duration::from_millis(5)),
            ..RepeatOptions::default()
        };
        let bytes = pack_job_scheduler_opts("n", &schedule).unwrap();
        let value: serde_json::Value = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(value["offset"], serde_json::Value::Null);
        assert_eq!(value["pattern"], "* * * * *");
    }
}
