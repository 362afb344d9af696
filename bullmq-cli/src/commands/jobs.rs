//! `jobs QUEUE`: a page of jobs by state (each state paged), filtered by name.

use bullmq::backend::Range;
use bullmq::job::JobType;
use bullmq::options::{KeyStyle, options_to_value};
use bullmq::{Job, JobState};
use serde_json::{Value, json};

use super::Ctx;
use crate::cli::{JobsArgs, Sort};
use crate::fail::Failure;
use crate::output;
use crate::values;

/// The job as the JSON shape `jobs` and `job` share (data and return value cut unless
/// `full`).
pub(super) fn job_json(job: &Job, state: Option<JobState>, full: bool) -> Value {
    json!({
        "id": job.id.as_str(),
        "name": job.name,
        "state": state.map(JobState::as_str),
        "data": values::json_of(&job.data, full),
        "opts": options_to_value(&job.opts, KeyStyle::Long),
        "progress": job.progress,
        "timestamp": job.timestamp,
        "delay_ms": u64::try_from(job.delay.as_millis()).unwrap_or(u64::MAX),
        "priority": job.priority,
        "attempts_made": job.attempts_made,
        "attempts_started": job.attempts_started,
        "stalled_counter": job.stalled_counter,
        "processed_on": job.processed_on,
        "finished_on": job.finished_on,
        "processed_by": job.processed_by,
        "failed_reason": job.failed_reason,
        "stacktrace": job.stacktrace,
        "return_value": job.return_value.as_deref().map(|v| values::json_of(v, full)),
        "parent": job.parent.as_ref().map(|p| json!({"id": p.id, "queue_key": p.queue_key})),
        "parent_key": job.parent_key,
        "repeat_job_key": job.repeat_job_key,
        "deduplication_id": job.deduplication_id,
    })
}

pub(super) async fn run(ctx: &Ctx, args: &JobsArgs) -> Result<(), Failure> {
    if let Some(search) = &args.search {
        return super::search::run(ctx, args, search).await;
    }
    let queue = ctx.store.queue(&args.queue).await?;
    let states: Vec<JobState> = match args.state {
        Some(s) => vec![s.state()],
        None => JobState::ALL.to_vec(),
    };
    let per_page = i64::try_from(args.per_page).unwrap_or(i64::MAX);
    let start = i64::try_from(args.page - 1)
        .unwrap_or(i64::MAX)
        .saturating_mul(per_page);
    let range = Range {
        start,
        end: start.saturating_add(per_page - 1),
        asc: args.sort == Sort::Asc,
    };
    let mut items = Vec::new();
    for state in states {
        let jobs = queue
            .get_jobs(&[JobType::State(state)], range)
            .await
            .map_err(|e| ctx.store.error("read the jobs of", &args.queue, &e))?;
        for job in jobs {
            if args.name.as_ref().is_none_or(|n| *n == job.name) {
                items.push(job_json(&job, Some(state), ctx.full));
            }
        }
    }
    output::list(ctx.format, &items, || text(&items, ctx.full))
}

pub(super) fn text(items: &[Value], full: bool) -> String {
    if items.is_empty() {
        return "no jobs".to_owned();
    }
    let mut table = output::table(&["ID", "NAME", "STATE", "ATTEMPTS", "CREATED", "DATA"]);
    for item in items {
        table.add_row(vec![
            item["id"].as_str().unwrap_or_default().to_owned(),
            item["name"].as_str().unwrap_or_default().to_owned(),
            item["state"].as_str().unwrap_or_default().to_owned(),
            item["attempts_made"].to_string(),
            output::time(item["timestamp"].as_u64()),
            if full {
                item["data"].to_string()
            } else {
                values::cell(&item["data"], 60)
            },
        ]);
    }
    table.to_string()
}
