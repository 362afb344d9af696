//! `remove QUEUE ID...`: remove jobs by id, with their children. A job already gone counts
//! as removed before (running the command again does nothing twice); a job a worker holds
//! is refused and makes the command fail.

use bullmq::JobId;
use serde_json::json;

use crate::cli::BulkArgs;
use crate::confirm::confirm;
use crate::context::Ctx;
use crate::fail::Failure;
use crate::interrupt::Interrupt;
use crate::{output, progress};

pub(super) async fn run(
    ctx: &Ctx,
    queue_name: &str,
    ids: &[String],
    bulk: &BulkArgs,
) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let fail = |e: bullmq::Error| ctx.store.error("remove jobs of", queue_name, &e);
    let mut existing = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        let job_id = JobId::from(id.as_str());
        match queue.get_job_state(&job_id).await.map_err(fail)? {
            Some(_) => existing.push(job_id),
            None => missing.push(id.clone()),
        }
    }
    let matched = u64::try_from(existing.len()).unwrap_or(u64::MAX);
    let mut removed = Vec::new();
    let mut locked = Vec::new();
    let mut interrupted = false;
    if !bulk.dry_run {
        if existing.len() > 1 {
            confirm(
                bulk,
                &format!(
                    "remove {matched} jobs of queue {queue_name:?} on {}",
                    ctx.store.target()
                ),
            )?;
        }
        let interrupt = Interrupt::listen();
        let bar = progress::bar(matched, "remove");
        for id in &existing {
            if interrupt.is_set() {
                interrupted = true;
                break;
            }
            if queue.remove(id, true).await.map_err(fail)? {
                removed.push(id.as_str().to_owned());
            } else {
                locked.push(id.as_str().to_owned());
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
    }
    let item = json!({
        "command": "remove",
        "queue": queue_name,
        "dry_run": bulk.dry_run,
        "matched": matched,
        "done": removed.len(),
        "removed": removed,
        "missing": missing,
        "locked": locked,
        "interrupted": interrupted,
    });
    output::one(ctx.format, &item, || {
        let mut line = if bulk.dry_run {
            format!("dry run: would remove {matched} jobs of queue {queue_name:?}; nothing changed")
        } else {
            format!("removed {} jobs of queue {queue_name:?}", removed.len())
        };
        if !missing.is_empty() {
            line.push_str(&format!("; not found: {}", missing.join(", ")));
        }
        if !locked.is_empty() {
            line.push_str(&format!("; held by a worker, kept: {}", locked.join(", ")));
        }
        line
    })?;
    if interrupted {
        return Err(Failure::failed(format!(
            "`remove` on queue {queue_name:?} was interrupted after {} of {matched} jobs; run the \
             same command again to go on",
            removed.len()
        )));
    }
    if !locked.is_empty() {
        return Err(Failure::failed(format!(
            "{} jobs of queue {queue_name:?} are held by a worker and were kept: {}; wait for \
             them to finish, or stop their worker, then run the command again",
            locked.len(),
            locked.join(", ")
        )));
    }
    Ok(())
}
