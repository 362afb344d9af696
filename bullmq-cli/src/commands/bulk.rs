//! What every command that changes many jobs shares: counting, the dry run, asking, the
//! batch loop (progress bar, ctrl-c between batches, throttle) and the closing summary.

use std::future::Future;
use std::time::Duration;

use bullmq::job::JobType;
use bullmq::{AnyBackend, JobState, Queue};
use serde_json::json;

use crate::cli::BulkArgs;
use crate::confirm::confirm;
use crate::context::Ctx;
use crate::fail::{Failure, count_of};
use crate::interrupt::Interrupt;
use crate::{output, progress};

/// How many jobs of `queue` are in `states`.
pub(super) async fn count(
    ctx: &Ctx,
    queue: &Queue<AnyBackend>,
    states: &[JobState],
) -> Result<u64, Failure> {
    let types: Vec<JobType> = states.iter().copied().map(JobType::State).collect();
    let counts = queue.get_job_counts(&types).await.map_err(|e| {
        ctx.store
            .error("count the jobs of", queue.name().as_str(), &e)
    })?;
    Ok(counts.iter().map(|(_, n)| n).sum())
}

/// One bulk command's run, for its summary.
pub(super) struct Plan<'a> {
    /// The command's name (`retry`).
    pub(super) command: &'static str,
    /// The queue.
    pub(super) queue: &'a str,
    /// The state selected (`failed`), when one is.
    pub(super) state: Option<&'a str>,
    /// What it does, in the infinitive, for the question (`retry 10 failed jobs`).
    pub(super) verb: &'static str,
    /// What it did, for the summary (`retried`).
    pub(super) done_verb: &'static str,
    /// The jobs, for sentences (`failed jobs`).
    pub(super) noun: String,
}

/// What a batch step reports: jobs done so far, when it counted them (counting costs a
/// query, made only when a bar shows it or at the end), and whether more remain.
pub(super) struct Step {
    pub(super) done: Option<u64>,
    pub(super) more: bool,
}

impl Step {
    /// The step after a batch call that answered `batch`, for a command whose `matched` jobs
    /// leave the selection as they are done: `left` counts what remains, only when a bar
    /// shows the progress (piped, the jobs are counted once, at the end).
    pub(super) async fn after<Fut>(
        batch: bullmq::backend::Batch,
        matched: u64,
        left: impl FnOnce() -> Fut,
    ) -> bullmq::Result<Self>
    where
        Fut: Future<Output = bullmq::Result<u64>>,
    {
        let done = if progress::visible() {
            Some(matched.saturating_sub(left().await?))
        } else {
            None
        };
        Ok(Self {
            done,
            more: batch == bullmq::backend::Batch::More,
        })
    }
}

impl Plan<'_> {
    /// The summary of a dry run: how many jobs would change.
    pub(super) fn dry_run(&self, ctx: &Ctx, matched: u64) -> Result<(), Failure> {
        self.summary(ctx, matched, 0, 0, true, false)
    }

    /// Asks (unless --yes), then runs `step` until it reports nothing more or ctrl-c comes,
    /// drawing the bar; `recount` says how many are done when the last step did not count;
    /// ends with the summary.
    pub(super) async fn run<F, Fut, R, RFut>(
        &self,
        ctx: &Ctx,
        bulk: &BulkArgs,
        matched: u64,
        mut step: F,
        recount: R,
    ) -> Result<(), Failure>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bullmq::Result<Step>>,
        R: FnOnce() -> RFut,
        RFut: Future<Output = bullmq::Result<u64>>,
    {
        if matched == 0 {
            // Nothing selected: nothing to ask about, nothing to do.
            return self.summary(ctx, 0, 0, 0, false, false);
        }
        confirm(
            bulk,
            &format!(
                "{} {matched} {} of queue {:?} on {}",
                self.verb,
                self.noun,
                self.queue,
                ctx.store.target()
            ),
        )?;
        let interrupt = Interrupt::listen();
        let bar = progress::bar(matched, self.command);
        let (mut done, mut batches, mut interrupted, mut stale) = (0, 0, false, false);
        loop {
            if interrupt.is_set() {
                interrupted = true;
                break;
            }
            let result = step().await;
            let step = match result {
                Ok(step) => step,
                Err(e) => {
                    bar.abandon();
                    return Err(ctx.store.error(
                        &format!(
                            "{} (after {batches} batches, {done} jobs) the jobs of",
                            self.verb
                        ),
                        self.queue,
                        &e,
                    ));
                }
            };
            batches += 1;
            stale = step.done.is_none();
            if let Some(now) = step.done {
                done = now;
                bar.set_position(done.min(matched));
            }
            if !step.more {
                break;
            }
            if bulk.throttle_ms > 0 {
                tokio::time::sleep(Duration::from_millis(bulk.throttle_ms)).await;
            }
        }
        bar.finish_and_clear();
        if stale {
            done = recount().await.map_err(|e| {
                ctx.store.error(
                    &format!("count what `{}` did to", self.command),
                    self.queue,
                    &e,
                )
            })?;
        }
        self.summary(ctx, matched, done, batches, false, interrupted)
    }

    fn summary(
        &self,
        ctx: &Ctx,
        matched: u64,
        done: u64,
        batches: u64,
        dry_run: bool,
        interrupted: bool,
    ) -> Result<(), Failure> {
        let item = json!({
            "command": self.command,
            "queue": self.queue,
            "state": self.state,
            "dry_run": dry_run,
            "matched": matched,
            "done": done,
            "batches": batches,
            "interrupted": interrupted,
        });
        output::one(ctx.format, &item, || {
            if dry_run {
                format!(
                    "dry run: would {} {matched} {} of queue {:?}; nothing changed",
                    self.verb, self.noun, self.queue
                )
            } else if interrupted {
                format!(
                    "interrupted: {} {done} of {matched} {} of queue {:?} in {}",
                    self.done_verb,
                    self.noun,
                    self.queue,
                    count_of(batches, "batch", "batches")
                )
            } else {
                format!(
                    "{} {done} {} of queue {:?} in {}",
                    self.done_verb,
                    self.noun,
                    self.queue,
                    count_of(batches, "batch", "batches")
                )
            }
        })?;
        if interrupted {
            return Err(Failure::failed(format!(
                "`{}` on queue {:?} was interrupted after {done} of {matched} jobs; what was done \
                 is done, run the same command again to go on",
                self.command, self.queue
            )));
        }
        Ok(())
    }
}
