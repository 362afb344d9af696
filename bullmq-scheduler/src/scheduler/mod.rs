//! `JobScheduler`: Node.js BullMQ's job schedulers (`queue.upsertJobScheduler` and friends) on
//! any backend that implements the `Schedulers` section.

mod error;
mod validate;

pub use error::SchedulerError;
pub use validate::validate_schedule;

use bullmq_core::backend::Lifecycle;
use bullmq_core::telemetry::{context, metrics, spans};
use std::time::Duration;
use tracing::Instrument;

use bullmq_core::__private::advance_job_scheduler;
use bullmq_core::backend::{AddJobSchedulerArgs, JobSchedulerRecord, QueueMeta, Schedulers};
use bullmq_core::json::JsonPayload;
use bullmq_core::options::UnixMillis;
use bullmq_core::scheduling::{RepeatOptions, plan_iteration};
use bullmq_core::{Job, JobId, JobOptions, ProducerSettings};

/// The job a scheduler creates at each iteration: its name, data and options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobTemplate {
    /// Job name; the scheduler id when absent, as in Node.js.
    pub name: Option<String>,
    /// Job data, serialized as `JSON.stringify` writes it; `{}` when absent.
    pub data: Option<JsonPayload>,
    /// Job options, merged over the scheduler's default options.
    pub opts: JobOptions,
}

impl JobTemplate {
    /// A template with this name, no data and no options.
    #[must_use]
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            ..Self::default()
        }
    }

    /// Sets the data: any `Serialize` value, or a reference to one (a
    /// [`RawValue`](serde_json::value::RawValue) is stored as given). Data that cannot be
    /// serialized is reported by the upsert.
    ///
    /// Data parsed from text needs its type named, since any type would do here:
    /// `serde_json::from_str::<serde_json::Value>(text)?` (a bare `serde_json::from_str(text)?`
    /// fails to compile with ``the trait `Serialize` is not implemented for `!` ``).
    #[must_use]
    pub fn data(mut self, data: impl serde::Serialize) -> Self {
        self.data = Some(JsonPayload::new(data));
        self
    }

    /// Sets the options.
    #[must_use]
    pub fn opts(mut self, opts: JobOptions) -> Self {
        self.opts = opts;
        self
    }
}

/// The iteration an upsert created: its job id (`repeat:<schedulerId>:<millis>`) and delay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledIteration {
    /// The job's id.
    pub id: JobId,
    /// How long until it runs.
    pub delay: Duration,
}

/// Job schedulers of one queue.
///
/// ```no_run
/// # async fn demo<B: bullmq_core::backend::Backend>(backend: B) -> Result<(), bullmq_scheduler::SchedulerError> {
/// use bullmq_scheduler::{JobScheduler, JobTemplate, RepeatOptions};
///
/// let schedulers = JobScheduler::new(backend);
/// let nightly = RepeatOptions::cron("0 3 * * *").tz("Europe/London");
/// let first = schedulers.upsert("nightly-report", &nightly, JobTemplate::named("report")).await?;
/// # Ok(()) }
/// ```
pub struct JobScheduler<B> {
    backend: B,
    /// The queue's default job options and its meta, as the `Queue` Node.js upserts through.
    producer: ProducerSettings,
}

impl<B> std::fmt::Debug for JobScheduler<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobScheduler").finish_non_exhaustive()
    }
}

impl<B: Schedulers> JobScheduler<B> {
    /// Schedulers on `backend` (which names the queue).
    pub fn new(backend: B) -> Self {
        Self {
            backend,
            producer: ProducerSettings::default(),
        }
    }

    /// The approximate length the queue's event stream is trimmed to, written into its meta
    /// on the first upsert (upstream: the queue's `streams.events.maxLen`, 10,000 by default).
    #[must_use]
    pub fn max_len_events(self, max: u64) -> Self {
        self.with_producer(|p| p.max_len_events(max))
    }

    /// Options under every template's (Node's queue `defaultJobOptions`).
    #[must_use]
    pub fn default_job_options(self, defaults: JobOptions) -> Self {
        self.with_producer(|p| p.default_job_options(defaults))
    }

    fn with_producer(mut self, set: impl FnOnce(ProducerSettings) -> ProducerSettings) -> Self {
        self.producer = set(self.producer);
        self
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The queue's name, as the backend's keys spell it.
    fn queue_name(&self) -> String
    where
        B: Lifecycle,
    {
        let backend = &self.backend;
        backend
            .parse_node_key(&backend.to_key("0"))
            .map_or_else(|| backend.qualified_name().to_owned(), |key| key.queue)
    }

    /// Adds the iteration after `job`, a scheduler's job that just ran (what a worker does on
    /// fetching it, as Node's worker does). `Ok(None)` when the schedule is over, the scheduler
    /// was removed, or another worker already added that iteration.
    ///
    /// # Errors
    ///
    /// An invalid stored pattern, or a backend failure.
    pub async fn advance(&self, job: &Job) -> Result<Option<JobId>, SchedulerError>
    where
        B: Lifecycle,
    {
        let Some(scheduler_id) = &job.repeat_job_key else {
            return Ok(None);
        };
        // The worker's own step, so that both refuse and plan alike.
        let now = self.backend.clock().now_ms();
        Ok(advance_job_scheduler(&self.backend, job, scheduler_id, now, None).await?)
    }

    /// Reads scheduler `id` (Node's `getJobScheduler`).
    ///
    /// # Errors
    ///
    /// A backend failure.
    pub async fn get(&self, id: &str) -> Result<Option<JobSchedulerRecord>, SchedulerError> {
        Ok(self.backend.get_job_scheduler(id).await?)
    }

    /// Schedulers by next run, positions `start..=end` (negative counts from the end), like
    /// Node's `getJobSchedulers(start, end, asc)`.
    ///
    /// # Errors
    ///
    /// A backend failure.
    pub async fn list(
        &self,
        start: i64,
        end: i64,
        asc: bool,
    ) -> Result<Vec<JobSchedulerRecord>, SchedulerError> {
        let ids = self
            .backend
            .get_job_schedulers_range(start, end, asc)
            .await?;
        let mut out = Vec::with_capacity(ids.len());
        for (id, next) in ids {
            if let Some(mut record) = self.backend.get_job_scheduler(&id).await? {
                record.next_millis = Some(next);
                out.push(record);
            }
        }
        Ok(out)
    }

    /// How many schedulers the queue has.
    ///
    /// # Errors
    ///
    /// A backend failure.
    pub async fn count(&self) -> Result<u64, SchedulerError> {
        Ok(self.backend.get_job_schedulers_count().await?)
    }

    /// Removes scheduler `id` and its pending iteration; true if it existed.
    ///
    /// # Errors
    ///
    /// A backend failure.
    pub async fn remove(&self, id: &str) -> Result<bool, SchedulerError> {
        Ok(self.backend.remove_job_scheduler(id).await?)
    }
}

impl<B: Schedulers + QueueMeta> JobScheduler<B> {
    /// Creates or replaces scheduler `id` and adds its next iteration (Node's
    /// `queue.upsertJobScheduler`). `Ok(None)` when the schedule has no iteration left (its
    /// `limit` is 0, or no cron match before its end date).
    ///
    /// Like Node's `Queue`, it first writes the queue's meta (`version`, `opts.maxLenEvents`),
    /// once per `JobScheduler`. The schedule's `count` is ignored: iterations are counted from
    /// 1 again (Node.js 6.7.6 made the count internal).
    ///
    /// # Errors
    ///
    /// [`SchedulerError`] for a refused schedule (see [`validate_schedule`]), an end date in
    /// the past, or a backend failure.
    pub async fn upsert(
        &self,
        id: &str,
        schedule: &RepeatOptions,
        template: JobTemplate,
    ) -> Result<Option<ScheduledIteration>, SchedulerError>
    where
        B: Lifecycle,
    {
        let now = self.backend.clock().now_ms();
        // The iteration count is the scheduler's own: as Node.js (since 6.7.6), an upsert
        // starts it afresh whatever `count` the caller passed.
        let schedule = &RepeatOptions {
            count: None,
            ..schedule.clone()
        };
        validate_schedule(schedule)?;
        let end_date = schedule.end_at().map(UnixMillis::get);
        if let Some(end_date) = end_date.filter(|e| *e != 0 && *e < now) {
            return Err(SchedulerError::EndDateInPast { end_date, now });
        }
        // Node's `Queue` writes its meta when it connects, whether or not an iteration follows.
        self.producer.write_meta(&self.backend).await?;
        let name = template.name.unwrap_or_else(|| id.to_owned());
        // Node's `add <queue>.<job name>` producer span; the iterations carry its context.
        let span = spans::scheduler_add(&self.queue_name(), &name, id);
        let data = match &template.data {
            Some(data) => data
                .text("job scheduler template data")
                .map_err(bullmq_core::Error::from)?
                .to_owned(),
            None => "{}".to_owned(),
        };
        // Node's `{...defaultJobOptions, ...template.opts}`: the template's set options win.
        let opts = self.producer.job_options(template.opts);
        let Some(mut plan) = plan_iteration(id, schedule, &opts, now)? else {
            return Ok(None);
        };
        // As Node's: the context goes into the iteration's options only; the scheduler keeps
        // the template's options as given.
        context::apply_to_child(&span, &mut plan.delayed_job_opts);
        let mut stored = schedule.clone();
        stored.immediately = None;
        let args = AddJobSchedulerArgs {
            scheduler_id: id.to_owned(),
            // Node clamps a cron slot to now; an `every` slot is the script's to compute.
            next_millis: plan.next_millis.map_or(0, |n| n.max(now)),
            template_name: name,
            template_data: data,
            template_opts: opts,
            schedule: stored,
            delayed_job_opts: plan.delayed_job_opts,
            producer_id: None,
        };
        let (id, delay) = self
            .backend
            .add_job_scheduler(&args)
            .instrument(span.clone())
            .await?;
        spans::record_job_id(&span, id.as_str());
        metrics::record_added(&self.queue_name(), &args.template_name, 1);
        Ok(Some(ScheduledIteration { id, delay }))
    }
}
