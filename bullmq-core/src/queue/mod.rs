//! `Queue`: the producer and admin side, over any backend.
//!
//! One file per group of methods: adding here, `getters` (jobs, counts, meta), `admin`
//! (pause, clean, limits, removal), `observability` (metrics, Prometheus, workers), `scaling`
//! (autoscaling signals) and `job_ref` (one job's operations, Node's `Job` methods, through
//! [`JobRef`]).

mod admin;
mod getters;
mod job_ref;
mod meta;
mod observability;
mod producer;
mod scaling;
mod typed;

pub use getters::{CheckedJobs, QueueMetaInfo};
pub use job_ref::JobRef;
pub use meta::QueueMetaWriter;
pub use producer::ProducerSettings;
pub use scaling::{ScalingReport, ScalingReporter};
pub use typed::TypedQueue;

use serde::Serialize;

use crate::backend::{AddJobs, Lifecycle, NewJob, ParentKeyOpts, QueueMeta};
use crate::codec::CodecError;
use crate::error::{BulkAddError, RefusedJob};
use crate::options::ValidationError;
use crate::telemetry::{context, metrics, spans};
use crate::{Job, JobOptions, QueueName, Result};
use tracing::{Instrument, Span};

/// A queue, as Node.js BullMQ's `Queue`: add jobs and manage the queue.
///
/// Generic over the backend `B`; each group of methods asks only for the backend sections it
/// uses.
///
/// ```
/// use bullmq_core::backend::Backend;
/// use bullmq_core::{JobOptions, Queue};
///
/// async fn welcome<B: Backend>(queue: &Queue<B>) -> bullmq_core::Result<()> {
///     let data = serde_json::json!({"to": "a@b.c"});
///     let job = queue.add("welcome", &data, JobOptions::new().attempts(3)).await?;
///     println!("added job {}", job.id);
///     Ok(())
/// }
/// ```
pub struct Queue<B> {
    name: QueueName,
    backend: B,
    /// The default job options, and the queue's `meta` hash written once, as Node.js writes
    /// it on start.
    producer: ProducerSettings,
}

/// The library name and version written to a queue's `meta.version`: the Node.js BullMQ
/// release whose behaviour this crate reproduces, so that tools reading it (bull-board, Node's
/// `getVersion()`) treat the queue as the 6.7.6 queue it is.
pub const LIB_VERSION: &str = "bullmq:6.7.6";

/// Upstream's default approximate length of the event stream (`streams.events.maxLen`).
pub const DEFAULT_MAX_LEN_EVENTS: u64 = 10_000;

impl<B> std::fmt::Debug for Queue<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// One job of [`Queue::add_bulk`].
#[derive(Debug, Clone, PartialEq)]
pub struct BulkJob<T> {
    /// The job's name.
    pub name: String,
    /// Its data.
    pub data: T,
    /// Its options.
    pub opts: JobOptions,
}

impl<B: Lifecycle> Queue<B> {
    /// The queue `backend` is bound to, named as the backend names it: the one constructor
    /// that cannot disagree with its backend.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`](crate::Error::Invalid) (field `name`) when the backend does not
    /// say which queue it is bound to (a third-party backend without
    /// [`Lifecycle::bound_queue`]): build it with [`try_new`](Self::try_new) then.
    pub fn from_backend(backend: B) -> Result<Self> {
        let Some(name) = backend.bound_queue().cloned() else {
            return Err(ValidationError::single(
                "queue",
                "name",
                "the backend does not say which queue it is bound to; \
                 use Queue::try_new(name, backend)",
            )
            .into());
        };
        Ok(Self::unchecked(name, backend))
    }

    /// A queue named `name` on `backend`, checking that the backend is bound to that queue.
    ///
    /// # Errors
    ///
    /// [`Error::Invalid`](crate::Error::Invalid) (field `name`) when `backend` is bound to
    /// another queue: jobs would be written to the backend's queue while spans, metrics and
    /// events named `name`.
    pub fn try_new(name: QueueName, backend: B) -> Result<Self> {
        if let Some(bound) = backend.bound_queue()
            && *bound != name
        {
            return Err(ValidationError::single(
                "queue",
                "name",
                format!(
                    "the backend is bound to queue `{}`, not `{}`; build the queue with \
                     Queue::from_backend(backend), or the backend for `{}`",
                    bound.as_str(),
                    name.as_str(),
                    name.as_str()
                ),
            )
            .into());
        }
        Ok(Self::unchecked(name, backend))
    }
}

impl<B> Queue<B> {
    /// A queue named `name` on `backend`, as given: the name is not checked against the
    /// backend's, so a mismatch writes jobs to the backend's queue under spans, metrics and
    /// events named `name`. Use [`from_backend`](Self::from_backend), which takes the name
    /// from the backend, or [`try_new`](Self::try_new), which checks that the two agree.
    #[deprecated(
        since = "0.2.0",
        note = "the backend already names its queue: use `Queue::from_backend(backend)`, or \
                `Queue::try_new(name, backend)` to check that the two agree"
    )]
    pub fn new(name: QueueName, backend: B) -> Self {
        Self::unchecked(name, backend)
    }

    /// The one constructor the checked ones and the crate's own callers (which hold a
    /// backend bound to `name`) go through.
    pub(crate) fn unchecked(name: QueueName, backend: B) -> Self {
        Self {
            name,
            backend,
            producer: ProducerSettings::default(),
        }
    }

    /// The approximate length the event stream is trimmed to (upstream:
    /// `streams.events.maxLen`, 10,000 by default).
    #[must_use]
    pub fn max_len_events(mut self, max: u64) -> Self {
        self.producer = self.producer.max_len_events(max);
        self
    }

    /// Options every job starts from; a job's own options win, field by field, as in Node.js.
    #[must_use]
    pub fn default_job_options(mut self, defaults: JobOptions) -> Self {
        self.producer = self.producer.default_job_options(defaults);
        self
    }

    /// The queue's name.
    pub fn name(&self) -> &QueueName {
        &self.name
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }
}

impl<B: Lifecycle> Queue<B> {
    /// This queue on a [handle](Lifecycle::handle) of its own, as a worker keeps it: closing
    /// it leaves the backend this queue was built on open.
    pub(crate) fn on_own_handle(self) -> Self {
        Self {
            backend: self.backend.handle(),
            ..self
        }
    }

    /// Another `Queue` value for the same queue, with the same defaults, on a clone of the
    /// backend (a pool builds each worker's queue this way).
    pub(crate) fn duplicate(&self) -> Self
    where
        B: Clone,
    {
        Self {
            name: self.name.clone(),
            backend: self.backend.clone(),
            producer: self.producer.duplicate(),
        }
    }

    /// Now, Unix ms, from the backend's clock (the queue's only source of time).
    pub(crate) fn now_ms(&self) -> u64 {
        self.backend.clock().now_ms()
    }

    /// Builds the job [`add`](Self::add) would store, as Node.js does before it is sent:
    /// defaults merged, every rule checked, data serialized once. Nothing is written; a
    /// backend's own ways of adding (PostgreSQL's enqueueing inside the caller's transaction)
    /// start from it.
    pub fn prepare_job<T: Serialize + ?Sized>(
        &self,
        name: &str,
        data: &T,
        opts: JobOptions,
    ) -> Result<Job> {
        let data = crate::json::to_string(data).map_err(|e| CodecError::Encode {
            what: "job data",
            reason: e.to_string(),
        })?;
        let opts = self.producer.job_options(opts);
        opts.validate()?;
        opts.check_data_size(name, &data)?;
        Ok(Job::new(
            name,
            data,
            opts.with_node_defaults(),
            self.now_ms(),
        ))
    }
}

impl<B: Lifecycle> Queue<B> {
    /// Prepares every job of a bulk as [`prepare_job`](Self::prepare_job) does. When any
    /// fails, the error is a [`BulkAddError`] naming every failing job by its input index
    /// (nothing is written either way).
    ///
    /// ```
    /// use bullmq_core::backend::Lifecycle;
    /// use bullmq_core::{BulkJob, Error, JobOptions, Queue};
    ///
    /// fn check<B: Lifecycle>(queue: &Queue<B>) {
    ///     let jobs = vec![
    ///         BulkJob { name: "ok".into(), data: 1, opts: JobOptions::new() },
    ///         BulkJob { name: "bad".into(), data: 2, opts: JobOptions::new().priority(u32::MAX) },
    ///     ];
    ///     let Err(Error::Bulk(refused)) = queue.prepare_bulk(jobs) else { panic!() };
    ///     assert_eq!(refused.refused[0].index, Some(1));
    /// }
    /// ```
    pub fn prepare_bulk<T: Serialize>(&self, jobs: Vec<BulkJob<T>>) -> Result<Vec<NewJob>> {
        let total = jobs.len();
        // Sized up front: collecting `Result`s cannot know the length, and growing a vector of
        // jobs by copying costs more than preparing them.
        let mut entries = Vec::with_capacity(total);
        let mut refused = Vec::new();
        for (index, j) in jobs.into_iter().enumerate() {
            match self.prepare_job(&j.name, &j.data, j.opts) {
                Ok(job) => {
                    let parent = ParentKeyOpts::of(&job);
                    entries.push(NewJob { job, parent });
                }
                Err(error) => refused.push(RefusedJob {
                    index: Some(index),
                    error,
                }),
            }
        }
        if refused.is_empty() {
            Ok(entries)
        } else {
            Err(BulkAddError::nothing_added(total, refused).into())
        }
    }
}

impl<B: QueueMeta> Queue<B> {
    /// Writes the queue's `meta` (`opts.maxLenEvents`, `version`) as a Node.js `Queue` does when
    /// it starts; done once, before the first job is added.
    pub async fn write_meta(&self) -> Result<()> {
        self.producer.write_meta(&self.backend).await
    }
}

impl<B: AddJobs + QueueMeta + Lifecycle> Queue<B> {
    /// Adds a job; its data is anything `serde` can write as JSON.
    ///
    /// Every option rule is checked first; nothing is written when one fails. The returned job
    /// carries the id the store gave it (for a duplicate or deduplicated job, the id of the job
    /// that already exists).
    pub async fn add<T: Serialize + ?Sized>(
        &self,
        name: &str,
        data: &T,
        mut opts: JobOptions,
    ) -> Result<Job> {
        let span = spans::add(self.name.as_str(), name);
        opts.telemetry = context::for_add(&span, opts.telemetry.take());
        // The span times the add from its creation to its drop; it is not entered around the
        // round trip (entering and leaving it at each poll costs as much as the span itself),
        // as nothing of ours runs inside it but that round trip (a `reconnect` span, if any,
        // goes under the caller's span).
        let mut job = self.prepare_job(name, data, opts)?;
        self.write_meta().await?;
        job.id = self.backend.add_job(&job, &ParentKeyOpts::of(&job)).await?;
        spans::record_job_id(&span, job.id.as_str());
        metrics::record_added(self.name.as_str(), name, 1);
        Ok(job)
    }

    /// Adds many jobs in one round trip; every job is checked before any is written.
    ///
    /// Not atomic, as in Node.js: each job is added on its own (on Redis one script call
    /// each, pipelined; on PostgreSQL one statement whose refused jobs are skipped), so a job
    /// the store refuses (a missing parent, a parent that cannot be replaced) does not stop
    /// the jobs after it. Then, and whenever the bulk was not added whole, the error is
    /// [`Error::Bulk`](crate::Error::Bulk) with a [`BulkAddError`](crate::BulkAddError):
    /// the ids of the jobs added and the input index and cause of each job refused; retry
    /// the jobs of its [`to_retry`](crate::BulkAddError::to_retry) and no job is added twice.
    /// A job that fails its checks here, or is too large for the server
    /// ([`PayloadTooLarge`](crate::error::PayloadTooLarge)), is reported the same way with
    /// nothing of the bulk written. Any other error means nothing was written.
    ///
    /// There is no all-or-nothing mode on Redis. Checking the parents before sending costs
    /// little (one `EXISTS` round trip, 0.12 ms against 27 ms for 1,000 children of one
    /// parent, measured on a local server) but guarantees nothing: a parent can go between
    /// the check and the add, a duplicate custom id whose parent cannot be replaced is only
    /// found by the script, and `MULTI` runs every script without rolling back the others
    /// when one refuses; removing the added jobs afterwards would be seen by workers and
    /// event readers. Instead, retry what [`to_retry`](crate::BulkAddError::to_retry)
    /// names once the cause is fixed; on PostgreSQL, `add_bulk_in` inside a transaction
    /// that the caller rolls back on error adds all or nothing.
    ///
    /// ```
    /// use bullmq_core::backend::Backend;
    /// use bullmq_core::{BulkJob, Error, Queue};
    ///
    /// async fn add_all<B: Backend>(queue: &Queue<B>, jobs: Vec<BulkJob<u32>>) -> bullmq_core::Result<()> {
    ///     match queue.add_bulk(jobs.clone()).await {
    ///         Ok(_) => Ok(()),
    ///         Err(Error::Bulk(failed)) => {
    ///             for added in &failed.added {
    ///                 println!("job {} added as {}", added.index, added.id);
    ///             }
    ///             // Drop the refused ones, retry the rest: nothing is added twice.
    ///             let refused: Vec<usize> = failed.refused.iter().filter_map(|r| r.index).collect();
    ///             let rest = failed
    ///                 .to_retry()
    ///                 .into_iter()
    ///                 .filter(|i| !refused.contains(i))
    ///                 .map(|i| jobs[i].clone())
    ///                 .collect();
    ///             queue.add_bulk(rest).await.map(drop)
    ///         }
    ///         Err(other) => Err(other),
    ///     }
    /// }
    /// ```
    pub async fn add_bulk<T: Serialize>(&self, jobs: Vec<BulkJob<T>>) -> Result<Vec<Job>> {
        let span = spans::add_bulk(self.name.as_str(), jobs.iter().map(|j| j.name.as_str()));
        self.add_bulk_traced(jobs, &span)
            .instrument(span.clone())
            .await
    }

    async fn add_bulk_traced<T: Serialize>(
        &self,
        jobs: Vec<BulkJob<T>>,
        span: &Span,
    ) -> Result<Vec<Job>> {
        let mut jobs = jobs;
        for j in &mut jobs {
            context::apply_to_child(span, &mut j.opts);
        }
        let entries = self.prepare_bulk(jobs)?;
        self.write_meta().await?;
        let ids = match self.backend.add_jobs(&entries).await {
            Ok(ids) => ids,
            Err(crate::Error::Bulk(failed)) => {
                for added in &failed.added {
                    if let Some(entry) = entries.get(added.index) {
                        metrics::record_added(self.name.as_str(), &entry.job.name, 1);
                    }
                }
                return Err(crate::Error::Bulk(failed));
            }
            Err(other) => return Err(other),
        };
        for entry in &entries {
            metrics::record_added(self.name.as_str(), &entry.job.name, 1);
        }
        Ok(entries
            .into_iter()
            .zip(ids)
            .map(|(entry, id)| Job { id, ..entry.job })
            .collect())
    }
}
