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

/// Where a batch command (one of [`Action`]) runs and how: what `commands::run` hands it.
pub(super) struct Bulk<'a> {
    pub(super) ctx: &'a Ctx,
    /// The queue, as named on the command line.
    pub(super) queue_name: &'a str,
    pub(super) args: &'a BulkArgs,
}

impl<'a> Bulk<'a> {
    pub(super) fn new(ctx: &'a Ctx, queue_name: &'a str, args: &'a BulkArgs) -> Self {
        Self {
            ctx,
            queue_name,
            args,
        }
    }

    /// Opens the queue and counts its jobs in `states`.
    pub(super) async fn open(
        &self,
        states: &[JobState],
    ) -> Result<(Queue<AnyBackend>, u64), Failure> {
        let queue = self.ctx.store.queue(self.queue_name).await?;
        let types: Vec<JobType> = states.iter().copied().map(JobType::State).collect();
        let counts = queue.get_job_counts(&types).await.map_err(|e| {
            self.ctx
                .store
                .error("count the jobs of", queue.name().as_str(), &e)
        })?;
        let matched = counts.iter().map(|(_, n)| n).sum();
        Ok((queue, matched))
    }
}

/// The commands that run through a [`Plan`].
#[derive(Clone, Copy)]
pub(super) enum Action {
    Retry,
    Promote,
    Clean,
    Drain,
    Obliterate,
}

impl Action {
    /// The command's name, what it does in the infinitive (for the question: `retry 10
    /// failed jobs`) and what it did (for the summary: `retried`).
    fn words(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::Retry => ("retry", "retry", "retried"),
            Self::Promote => ("promote", "promote", "promoted"),
            Self::Clean => ("clean", "clean up to", "removed"),
            Self::Drain => ("drain", "remove", "removed"),
            Self::Obliterate => ("obliterate", "destroy the queue and its", "removed"),
        }
    }
}

/// One bulk command's run, for its question and summary.
pub(super) struct Plan<'a> {
    pub(super) action: Action,
    /// The state selected (`failed`), when one is.
    pub(super) state: Option<&'a str>,
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
    /// With --dry-run, only the summary of how many jobs would change. Else asks (unless
    /// --yes), then runs `step` until it reports nothing more or ctrl-c comes, drawing the
    /// bar; `recount` says how many are done when the last step did not count; ends with the
    /// summary.
    pub(super) async fn run<F, Fut, R, RFut>(
        &self,
        on: &Bulk<'_>,
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
        let (ctx, bulk, queue) = (on.ctx, on.args, on.queue_name);
        let (command, verb, _) = self.action.words();
        if bulk.dry_run {
            return self.summary(on, matched, 0, 0, true, false);
        }
        if matched == 0 {
            // Nothing selected: nothing to ask about, nothing to do.
            return self.summary(on, 0, 0, 0, false, false);
        }
        confirm(
            bulk,
            &format!(
                "{verb} {matched} {} of queue {queue:?} on {}",
                self.noun,
                ctx.store.target()
            ),
        )?;
        let interrupt = Interrupt::listen();
        let bar = progress::bar(matched, command);
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
                        &format!("{verb} (after {batches} batches, {done} jobs) the jobs of"),
                        queue,
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
                ctx.store
                    .error(&format!("count what `{command}` did to"), queue, &e)
            })?;
        }
        self.summary(on, matched, done, batches, false, interrupted)
    }

    fn summary(
        &self,
        on: &Bulk<'_>,
        matched: u64,
        done: u64,
        batches: u64,
        dry_run: bool,
        interrupted: bool,
    ) -> Result<(), Failure> {
        let (command, verb, done_verb) = self.action.words();
        let (queue, noun) = (on.queue_name, &self.noun);
        let item = json!({
            "command": command,
            "queue": queue,
            "state": self.state,
            "dry_run": dry_run,
            "matched": matched,
            "done": done,
            "batches": batches,
            "interrupted": interrupted,
        });
        output::one(on.ctx.format, &item, || {
            let batches = count_of(batches, "batch", "batches");
            if dry_run {
                format!(
                    "dry run: would {verb} {matched} {noun} of queue {queue:?}; nothing changed"
                )
            } else if interrupted {
                format!(
                    "interrupted: {done_verb} {done} of {matched} {noun} of queue {queue:?} in \
                     {batches}"
                )
            } else {
                format!("{done_verb} {done} {noun} of queue {queue:?} in {batches}")
            }
        })?;
        if interrupted {
            return Err(Failure::failed(format!(
                "`{command}` on queue {queue:?} was interrupted after {done} of {matched} jobs; \
                 what was done is done, run the same command again to go on"
            )));
        }
        Ok(())
    }
}
