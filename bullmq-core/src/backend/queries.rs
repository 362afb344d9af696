//! Reading jobs, counts, logs, dependencies and metrics.

use std::future::Future;
use std::time::Duration;

use super::scaling::ScalingSignals;
use super::types::{DependencyKind, Range};
use crate::job::JobType;
use crate::job::{FinishedState, JobDecodeError};
use crate::{Job, JobId, JobState, Result};

/// Whether a job has finished (upstream: `isFinished`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishStatus {
    /// No such job.
    Missing,
    /// Not finished yet.
    Pending,
    /// Completed, with its return value as JSON text.
    Completed(Option<String>),
    /// Failed, with its reason.
    Failed(Option<String>),
}

/// A page of a job's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobLogs {
    /// The lines in the range.
    pub logs: Vec<String>,
    /// How many lines the job has in all.
    pub count: u64,
}

/// One page of each dependency list asked for (upstream: `getDependencies`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependencies {
    /// Processed children: key and return value (JSON text), with the next cursor.
    pub processed: Option<(Vec<(String, String)>, u64)>,
    /// Unprocessed children's keys, with the next cursor.
    pub unprocessed: Option<(Vec<String>, u64)>,
    /// Ignored failures: key and reason, with the next cursor.
    pub ignored: Option<(Vec<(String, String)>, u64)>,
    /// Failed children's keys, with the next cursor.
    pub failed: Option<(Vec<String>, u64)>,
}

/// Which pages [`Queries::get_dependencies`] reads: a cursor and a count per list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DependenciesQuery {
    /// The lists to read, each with `(cursor, count)`.
    pub lists: Vec<(DependencyKind, u64, u64)>,
}

impl DependenciesQuery {
    /// The first page, of up to `count` items, of every list: processed, unprocessed, failed
    /// and ignored children (what a job's view or a flow's tree shows).
    ///
    /// ```
    /// use bullmq_core::backend::{DependenciesQuery, DependencyKind};
    ///
    /// let query = DependenciesQuery::first_pages(20);
    /// assert_eq!(query.lists.len(), 4);
    /// assert_eq!(query.lists[0], (DependencyKind::Processed, 0, 20));
    /// ```
    #[must_use]
    pub fn first_pages(count: u64) -> Self {
        let kinds = [
            DependencyKind::Processed,
            DependencyKind::Unprocessed,
            DependencyKind::Failed,
            DependencyKind::Ignored,
        ];
        Self {
            lists: kinds.into_iter().map(|kind| (kind, 0, count)).collect(),
        }
    }

    /// The next cursor of a list paged by offset, after a page asked at `cursor` for `count`
    /// items came back with `read` of them: `cursor + count` while pages come back full, 0
    /// (done) once one comes back short or `count` is 0, where Node.js would hand back the
    /// same cursor forever. Every list on PostgreSQL pages so, and failed children on Redis.
    ///
    /// ```
    /// use bullmq_core::backend::DependenciesQuery;
    ///
    /// assert_eq!(DependenciesQuery::next_offset(20, 10, 10), 30);
    /// assert_eq!(DependenciesQuery::next_offset(20, 10, 3), 0);
    /// assert_eq!(DependenciesQuery::next_offset(20, 0, 0), 0);
    /// ```
    #[must_use]
    pub fn next_offset(cursor: u64, count: u64, read: usize) -> u64 {
        let full = u64::try_from(read).unwrap_or(u64::MAX) >= count;
        if full && count > 0 {
            cursor.saturating_add(count)
        } else {
            0
        }
    }
}

/// Per-minute counts of finished jobs (upstream: `getMetrics`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Counts per minute, newest first.
    pub data: Vec<u64>,
    /// Total data points stored.
    pub count: u64,
    /// Jobs counted since collection began.
    pub total: u64,
    /// When the last data point was taken, Unix ms.
    pub prev_ts: u64,
    /// The total at that point.
    pub prev_count: u64,
}

/// One connected client, as the store lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientInfo {
    /// Its client name (`<prefix>:<base64(queue)>:w:<name>` for a worker).
    pub name: String,
    /// Its address.
    pub addr: String,
    /// Seconds since it connected.
    pub age: Option<u64>,
    /// Seconds since its last command.
    pub idle: Option<u64>,
    /// Every field the store reported, verbatim.
    pub raw: Vec<(String, String)>,
}

/// A page of [`Queries::paginate`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    /// The next cursor; `0` when done.
    pub cursor: u64,
    /// The items: child key, and value or failure reason where the list has one.
    pub items: Vec<(String, Option<String>)>,
    /// Items in the whole list.
    pub total: u64,
    /// The jobs themselves, when asked for (a child that is gone has none).
    pub jobs: Vec<Job>,
    /// Children whose stored fields could not be read, each with the reason; they are left
    /// out of `jobs` (the rule of [`sort_listed`](crate::job::sort_listed)).
    pub undecodable: Vec<(JobId, JobDecodeError)>,
}

impl Page {
    /// Adds child `id` as read from the store (`None`: gone), by the rule of
    /// [`sort_listed`](crate::job::sort_listed).
    ///
    /// # Errors
    ///
    /// `read`'s error when it is not [`Error::JobDecode`](crate::Error::JobDecode).
    pub fn push_read(&mut self, id: &JobId, read: Result<Option<Job>>) -> Result<()> {
        crate::job::sort_listed(id, read, &mut self.jobs, &mut self.undecodable)
    }
}

/// Queries (upstream: `getState`, `isFinished`, `isMaxed`, `isJobInState`, `getJobData`,
/// `getDeduplicationJobId`, `getJobLogs`, `getRateLimitTtl`, `getCounts`,
/// `getCountsPerPriority`, `getRanges`, `getDependencyCounts`, `getDependencies`,
/// `getProcessedChildrenValues`, `getIgnoredChildrenFailures`, `getMetrics`, `getClientList`,
/// `paginate`), and this crate's `scaling_signals`.
pub trait Queries: Send + Sync {
    /// The job's state; `None` when there is no such job.
    fn get_state(&self, job_id: &JobId) -> impl Future<Output = Result<Option<JobState>>> + Send;

    /// Whether the job finished, and how.
    fn is_finished(&self, job_id: &JobId) -> impl Future<Output = Result<FinishStatus>> + Send;

    /// True when the queue's global concurrency is reached.
    fn is_maxed(&self) -> impl Future<Output = Result<bool>> + Send;

    /// True when the job is in `state`.
    fn is_job_in_state(
        &self,
        state: JobState,
        job_id: &JobId,
    ) -> impl Future<Output = Result<bool>> + Send;

    /// Reads one job; `None` when there is no such job.
    fn get_job(&self, job_id: &JobId) -> impl Future<Output = Result<Option<Job>>> + Send;

    /// The job currently holding a deduplication id.
    fn get_deduplication_job_id(
        &self,
        deduplication_id: &str,
    ) -> impl Future<Output = Result<Option<JobId>>> + Send;

    /// A page of the job's log.
    fn get_job_logs(
        &self,
        job_id: &JobId,
        range: Range,
    ) -> impl Future<Output = Result<JobLogs>> + Send;

    /// How long the queue stays rate limited; zero when it is not.
    fn get_rate_limit_ttl(
        &self,
        max_jobs: Option<u64>,
    ) -> impl Future<Output = Result<Duration>> + Send;

    /// Jobs per type, in the order asked; delayed jobs due before `delayed_before` (Unix ms)
    /// only, when given.
    fn get_counts(
        &self,
        types: &[JobType],
        delayed_before: Option<u64>,
    ) -> impl Future<Output = Result<Vec<u64>>> + Send;

    /// Waiting jobs per priority, in the order asked.
    fn get_counts_per_priority(
        &self,
        priorities: &[u32],
    ) -> impl Future<Output = Result<Vec<u64>>> + Send;

    /// Job ids in the given types, sliced by `range` across them.
    fn get_ranges(
        &self,
        types: &[JobType],
        range: Range,
    ) -> impl Future<Output = Result<Vec<JobId>>> + Send;

    /// Sizes of a parent's dependency lists, in the order asked.
    fn get_dependency_counts(
        &self,
        job_id: &JobId,
        kinds: &[DependencyKind],
    ) -> impl Future<Output = Result<Vec<u64>>> + Send;

    /// Pages of a parent's dependency lists.
    fn get_dependencies(
        &self,
        job_id: &JobId,
        query: &DependenciesQuery,
    ) -> impl Future<Output = Result<Dependencies>> + Send;

    /// Every processed child's key and return value (JSON text).
    fn get_processed_children_values(
        &self,
        job_id: &JobId,
    ) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;

    /// Every ignored child failure: key and reason.
    fn get_ignored_children_failures(
        &self,
        job_id: &JobId,
    ) -> impl Future<Output = Result<Vec<(String, String)>>> + Send;

    /// Per-minute metrics of completed or failed jobs, data points `start..=end`.
    fn get_metrics(
        &self,
        kind: FinishedState,
        start: i64,
        end: i64,
    ) -> impl Future<Output = Result<Metrics>> + Send;

    /// The clients connected to the store that belong to this queue.
    fn get_client_list(&self) -> impl Future<Output = Result<Vec<ClientInfo>>> + Send;

    /// A page of one of a parent's dependency lists, items `start..=end` (`end == u64::MAX`
    /// reads to the end), with the jobs when `fetch_jobs`.
    fn paginate(
        &self,
        job_id: &JobId,
        kind: DependencyKind,
        start: u64,
        end: u64,
        fetch_jobs: bool,
    ) -> impl Future<Output = Result<Page>> + Send;

    /// The queue's autoscaling signals, read at the backend's clock in a bounded number of
    /// store operations: counts, the earliest due delayed job, and the timestamps of at most
    /// [`SCALING_LOOKAHEAD`](super::SCALING_LOOKAHEAD) jobs at the front of each ready
    /// structure (see [`ScalingSignals`] for how the age is computed).
    fn scaling_signals(&self) -> impl Future<Output = Result<ScalingSignals>> + Send;
}
