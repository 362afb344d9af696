//! `scheduler upsert|remove QUEUE ID`: create, replace or remove a job scheduler.

use std::time::Duration;

use bullmq::{JobScheduler, JobTemplate, RepeatOptions};
use serde_json::{Value, json};

use crate::cli::{SchedulerCommand, UpsertArgs};
use crate::context::Ctx;
use crate::fail::{Failure, cause};
use crate::output;

pub(super) async fn run(ctx: &Ctx, command: &SchedulerCommand) -> Result<(), Failure> {
    match command {
        SchedulerCommand::Upsert(args) => upsert(ctx, args).await,
        SchedulerCommand::Remove { queue, id } => remove(ctx, queue, id).await,
    }
}

async fn upsert(ctx: &Ctx, args: &UpsertArgs) -> Result<(), Failure> {
    let mut template = JobTemplate::default();
    template.name.clone_from(&args.name);
    if let Some(data) = &args.data {
        let value: Value = serde_json::from_str(data).map_err(|e| {
            Failure::usage(format!(
                "--data is not JSON: {e}; pass JSON such as '{{\"n\":1}}'"
            ))
        })?;
        template = template.data(value);
    }
    if let Some(opts) = &args.opts {
        template = template.opts(super::add::options(opts, "--opts")?);
    }
    let schedule = RepeatOptions {
        pattern: args.pattern.clone(),
        every: args.every.map(Duration::from_millis),
        tz: args.tz.clone(),
        limit: args.limit,
        ..RepeatOptions::default()
    };
    let queue = ctx.store.queue(&args.queue).await?;
    let schedulers = JobScheduler::new(queue.backend().clone());
    let next = schedulers
        .upsert(&args.id, &schedule, template)
        .await
        .map_err(|e| scheduler_error(ctx, "upsert", &args.queue, &e))?;
    let item = json!({
        "command": "scheduler upsert",
        "queue": args.queue,
        "id": args.id,
        "next_job_id": next.as_ref().map(|n| n.id.as_str()),
        "delay_ms": next.as_ref().map(|n| u64::try_from(n.delay.as_millis()).unwrap_or(u64::MAX)),
    });
    output::one(ctx.format, &item, || match &next {
        Some(n) => format!(
            "scheduler {:?} of queue {:?} saved; its next job {} runs in {} ms",
            args.id,
            args.queue,
            n.id.as_str(),
            n.delay.as_millis()
        ),
        None => format!(
            "scheduler {:?} of queue {:?} saved; it has no run left (its limit or end date)",
            args.id, args.queue
        ),
    })
}

async fn remove(ctx: &Ctx, queue_name: &str, id: &str) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let schedulers = JobScheduler::new(queue.backend().clone());
    let removed = schedulers
        .remove(id)
        .await
        .map_err(|e| scheduler_error(ctx, "remove", queue_name, &e))?;
    let item =
        json!({"command": "scheduler remove", "queue": queue_name, "id": id, "removed": removed});
    output::one(ctx.format, &item, || {
        if removed {
            format!("removed scheduler {id:?} of queue {queue_name:?}")
        } else {
            format!("no scheduler {id:?} in queue {queue_name:?}: nothing removed")
        }
    })
}

/// A refused schedule is the caller's to fix (exit 2); a store failure is not.
fn scheduler_error(
    ctx: &Ctx,
    action: &str,
    queue: &str,
    e: &bullmq::scheduler::SchedulerError,
) -> Failure {
    use bullmq::scheduler::SchedulerError as E;
    match e {
        E::Backend(inner) => ctx
            .store
            .error(&format!("{action} a scheduler of"), queue, inner),
        other => Failure::usage(format!(
            "the schedule is refused: {}; fix --pattern / --every / --tz / --limit and run \
             the command again",
            cause(other)
        )),
    }
}
