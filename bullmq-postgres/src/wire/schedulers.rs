//! The parameters of `add_job_scheduler` and `update_job_scheduler`, as Node.js's
//! `PostgresQueueBackend` passes them: the template data as is, the options and the schedule
//! as `jsonb` written by the JavaScript writer.

use bullmq_core::Result;
use bullmq_core::backend::{AddJobSchedulerArgs, NextIterationArgs};
use bullmq_core::codec::{self, CodecError, KeyStyle};
use bullmq_core::options::{JobOptions, UnixMillis};
use bullmq_core::scheduling::RepeatOptions;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sqlx::types::Json;

use super::{js_jsonb, millis, queued, to_i64};
use crate::connection::Query;
use crate::sql::{SqlCommand, commands};

/// The template data as a jsonb parameter: these commands do not cast their parameters, so
/// the JSON text travels as is (`'{}'` for none, as Node.js sends it).
fn template_data(text: &str) -> Result<&RawValue> {
    let text = if text.is_empty() { "{}" } else { text };
    serde_json::from_str(text).map_err(|e| {
        CodecError::Encode {
            what: "job scheduler template data",
            reason: e.to_string(),
        }
        .into()
    })
}

/// The schedule object Node.js's `JobScheduler` passes (`name`, `startDate`, `endDate`, `tz`,
/// `pattern`, `every`, `limit`, `offset`): absent values left out, except `offset`, which is
/// `null` unless the schedule is an `every` one with a non-zero offset. Dates of 0 count as
/// none, as in Node.js.
fn schedule_opts(name: &str, schedule: &RepeatOptions) -> Value {
    let mut m = Map::new();
    m.insert("name".to_owned(), name.into());
    if let Some(start) = schedule.start_at().map(UnixMillis::get).filter(|d| *d != 0) {
        m.insert("startDate".to_owned(), start.into());
    }
    if let Some(end) = schedule.end_at().map(UnixMillis::get).filter(|d| *d != 0) {
        m.insert("endDate".to_owned(), end.into());
    }
    if let Some(tz) = &schedule.tz {
        m.insert("tz".to_owned(), tz.as_str().into());
    }
    if let Some(pattern) = &schedule.pattern {
        m.insert("pattern".to_owned(), pattern.as_str().into());
    }
    if let Some(every) = schedule.every {
        m.insert("every".to_owned(), millis(every).into());
    }
    if let Some(limit) = schedule.limit {
        m.insert("limit".to_owned(), limit.into());
    }
    let offset = schedule
        .every
        .and(schedule.offset)
        .filter(|o| !o.is_zero())
        .map_or(Value::Null, |o| millis(o).into());
    m.insert("offset".to_owned(), offset);
    Value::Object(m)
}

/// A next run of 0 is "none" (an `every` schedule's slot is the function's to compute), sent
/// as `NULL` as Node.js sends its `undefined`.
fn next_millis(next: u64) -> Option<i64> {
    (next != 0).then(|| to_i64(next))
}

/// What both commands take about the iteration: the scheduler id, its next run and the
/// template data, after the queue; then whatever `middle` binds; then the delayed job's
/// options, now and the producer id.
fn iteration<'q>(
    command: SqlCommand,
    queue: &'q str,
    (scheduler_id, next, data): (&'q str, u64, &'q str),
    middle: impl FnOnce(Query<'q>) -> Result<Query<'q>>,
    (delayed_opts, now, producer): (&JobOptions, i64, Option<&'q str>),
) -> Result<Query<'q>> {
    let query = queued(command, queue)
        .bind(scheduler_id)
        .bind(next_millis(next))
        .bind(Json(template_data(data)?));
    let delayed_opts = codec::options_to_value(delayed_opts, KeyStyle::Long);
    Ok(middle(query)?
        .bind(js_jsonb("job options", &delayed_opts)?)
        .bind(now)
        .bind(producer))
}

/// `add_job_scheduler(queue, scheduler id, next millis, template data, template options,
/// schedule, delayed job options, now, producer id)`.
pub(crate) fn add_job_scheduler<'q>(
    queue: &'q str,
    args: &'q AddJobSchedulerArgs,
    now: i64,
) -> Result<Query<'q>> {
    let template_opts = codec::options_to_value(&args.template_opts, KeyStyle::Long);
    let schedule = schedule_opts(&args.template_name, &args.schedule);
    iteration(
        commands::ADD_JOB_SCHEDULER,
        queue,
        (&args.scheduler_id, args.next_millis, &args.template_data),
        |query| {
            Ok(query
                .bind(js_jsonb("job scheduler template options", &template_opts)?)
                .bind(js_jsonb("job scheduler", &schedule)?))
        },
        (&args.delayed_job_opts, now, args.producer_id.as_deref()),
    )
}

/// `update_job_scheduler(queue, scheduler id, next millis, template data, delayed job
/// options, now, producer id)`.
pub(crate) fn update_job_scheduler<'q>(
    queue: &'q str,
    args: &'q NextIterationArgs,
    now: i64,
) -> Result<Query<'q>> {
    iteration(
        commands::UPDATE_JOB_SCHEDULER,
        queue,
        (&args.scheduler_id, args.next_millis, &args.template_data),
        Ok,
        (&args.delayed_job_opts, now, args.producer_id.as_deref()),
    )
}
