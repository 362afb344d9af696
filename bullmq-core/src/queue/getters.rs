//! Reading jobs, counts and the queue's configuration (upstream: `QueueGetters`).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use super::Queue;
use crate::backend::{DependencyKind, JobLogs, Page, Queries, QueueMeta, Range, RateLimiter};
use crate::job::{JobDecodeError, JobType, sort_listed};
use crate::{Job, JobId, JobState, Result};

/// Every state, in the order upstream's `getJobCounts()` lists them when asked for none.
const ALL_TYPES: [JobType; 7] = [
    JobType::State(JobState::Active),
    JobType::State(JobState::Completed),
    JobType::State(JobState::Delayed),
    JobType::State(JobState::Failed),
    JobType::State(JobState::Prioritized),
    JobType::State(JobState::Waiting),
    JobType::State(JobState::WaitingChildren),
];

/// How many windows one state's bounded slice reads to refill itself (upstream's
/// `GET_JOBS_MAX_BACKFILL_ITERATIONS`).
const GET_JOBS_MAX_BACKFILL_ROUNDS: usize = 5;

/// The queue's `meta` hash, typed (upstream: `getMeta()`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueMetaInfo {
    /// Whether the queue is paused.
    pub paused: bool,
    /// Global concurrency, if set.
    pub concurrency: Option<u64>,
    /// Global rate limit: jobs per window, if set.
    pub max: Option<u64>,
    /// Global rate limit: the window in ms, if set.
    pub duration: Option<u64>,
    /// Approximate maximum length of the event stream.
    pub max_len_events: Option<u64>,
    /// The library that wrote the queue last, e.g. `bullmq:6.7.6`.
    pub version: Option<String>,
    /// Any other field, verbatim.
    pub other: BTreeMap<String, String>,
}

fn number(v: Option<&String>) -> Option<u64> {
    v.and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|f| f.is_finite() && *f >= 0.0)
        .map(|f| {
            // Every runtime writes these fields as integers; a fraction is truncated.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let n = f as u64;
            n
        })
}

/// What [`Queue::get_jobs_checked`] found: the jobs it could read, and the ids of those it
/// could not, each with the reason (which names the field).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CheckedJobs {
    /// The jobs read, in the order [`Queue::get_jobs`] gives them.
    pub jobs: Vec<Job>,
    /// Jobs present in the listing whose stored fields could not be read.
    pub undecodable: Vec<(JobId, JobDecodeError)>,
}

/// Upstream's default when no type is given; duplicates dropped, order kept.
fn sanitize(types: &[JobType]) -> Vec<JobType> {
    if types.is_empty() {
        return ALL_TYPES.to_vec();
    }
    let mut out: Vec<JobType> = Vec::with_capacity(types.len());
    for t in types {
        if !out.contains(t) {
            out.push(*t);
        }
    }
    out
}

impl<B: Queries> Queue<B> {
    /// One job, or `None` when there is no such job.
    pub async fn get_job(&self, id: &JobId) -> Result<Option<Job>> {
        self.backend.get_job(id).await
    }

    /// Jobs in the given states (every state when empty), each state sliced by `range`, in
    /// the order asked; a job met twice is kept where first met.
    ///
    /// Ids whose job is gone are skipped. For a range of non-negative indexes the slice is
    /// refilled from further along its state, as Node.js' `getJobs` script does, so a page
    /// keeps its size when some of its jobs were removed.
    ///
    /// A job whose stored fields cannot be read (another runtime wrote them oddly) does not
    /// fail the listing, as it would in Node.js: it is left out and logged as a warning
    /// naming it and the field, and the page is refilled past it like a removed job. Use
    /// [`get_jobs_checked`](Self::get_jobs_checked) to get those ids and reasons too.
    pub async fn get_jobs(&self, types: &[JobType], range: Range) -> Result<Vec<Job>> {
        let checked = self.get_jobs_checked(types, range).await?;
        for (id, reason) in &checked.undecodable {
            tracing::warn!(target: "bullmq", job_id = %id, %reason, "get_jobs: left out a job that cannot be read");
        }
        Ok(checked.jobs)
    }

    /// [`get_jobs`](Self::get_jobs), with the jobs that could not be read reported beside the
    /// others instead of logged.
    ///
    /// ```no_run
    /// # async fn demo(queue: &bullmq_core::Queue<impl bullmq_core::backend::Backend>) -> bullmq_core::Result<()> {
    /// use bullmq_core::JobState;
    /// use bullmq_core::backend::Range;
    ///
    /// let page = queue.get_jobs_checked(&[JobState::Failed.into()], Range::ALL).await?;
    /// for (id, reason) in &page.undecodable {
    ///     eprintln!("job {id} cannot be read: {reason}");
    /// }
    /// println!("{} readable failed jobs", page.jobs.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_jobs_checked(&self, types: &[JobType], range: Range) -> Result<CheckedJobs> {
        let types = sanitize(types);
        let mut seen = HashSet::new();
        let mut out = CheckedJobs::default();
        for t in types {
            let mut page = CheckedJobs::default();
            self.jobs_of_type(t, range, &mut page).await?;
            for job in page.jobs {
                if seen.insert(job.id.clone()) {
                    out.jobs.push(job);
                }
            }
            for (id, reason) in page.undecodable {
                if seen.insert(id.clone()) {
                    out.undecodable.push((id, reason));
                }
            }
        }
        Ok(out)
    }

    /// One state's slice of [`get_jobs`](Self::get_jobs), refilled when bounded.
    async fn jobs_of_type(&self, t: JobType, range: Range, out: &mut CheckedJobs) -> Result<()> {
        let jobs = out;
        if range.start < 0 || range.end < 0 {
            let ids = self.backend.get_ranges(&[t], range).await?;
            self.push_existing(&ids, usize::MAX, jobs).await?;
            return Ok(());
        }
        let needed = range.end.saturating_sub(range.start).saturating_add(1);
        let wanted = usize::try_from(needed).unwrap_or(0);
        let mut cursor = range.start;
        for _ in 0..GET_JOBS_MAX_BACKFILL_ROUNDS {
            if jobs.jobs.len() >= wanted {
                break;
            }
            let window = Range {
                start: cursor,
                end: cursor.saturating_add(needed - 1),
                asc: range.asc,
            };
            let ids = self.backend.get_ranges(&[t], window).await?;
            if ids.is_empty() {
                break;
            }
            self.push_existing(&ids, wanted, jobs).await?;
            cursor = cursor.saturating_add(i64::try_from(ids.len()).unwrap_or(i64::MAX));
        }
        Ok(())
    }

    /// Appends the jobs of `ids` that still exist, until `out` holds `wanted` readable ones;
    /// those that cannot be read go to `out.undecodable`.
    async fn push_existing(
        &self,
        ids: &[JobId],
        wanted: usize,
        out: &mut CheckedJobs,
    ) -> Result<()> {
        for id in ids {
            if out.jobs.len() >= wanted {
                break;
            }
            let read = self.backend.get_job(id).await;
            sort_listed(id, read, &mut out.jobs, &mut out.undecodable)?;
        }
        Ok(())
    }

    /// Waiting jobs.
    pub async fn get_waiting(&self, range: Range) -> Result<Vec<Job>> {
        self.get_jobs(&[JobState::Waiting.into()], range).await
    }

    /// Active jobs.
    pub async fn get_active(&self, range: Range) -> Result<Vec<Job>> {
        self.get_jobs(&[JobState::Active.into()], range).await
    }

    /// Delayed jobs.
    pub async fn get_delayed(&self, range: Range) -> Result<Vec<Job>> {
        self.get_jobs(&[JobState::Delayed.into()], range).await
    }

    /// Prioritized jobs.
    pub async fn get_prioritized(&self, range: Range) -> Result<Vec<Job>> {
        self.get_jobs(&[JobState::Prioritized.into()], range).await
    }

    /// Completed jobs.
    pub async fn get_completed(&self, range: Range) -> Result<Vec<Job>> {
        self.get_jobs(&[JobState::Completed.into()], range).await
    }

    /// Failed jobs.
    pub async fn get_failed(&self, range: Range) -> Result<Vec<Job>> {
        self.get_jobs(&[JobState::Failed.into()], range).await
    }

    /// Parents waiting for their children.
    pub async fn get_waiting_children(&self, range: Range) -> Result<Vec<Job>> {
        self.get_jobs(&[JobState::WaitingChildren.into()], range)
            .await
    }

    /// Jobs per type (every state when empty), in the order asked.
    pub async fn get_job_counts(&self, types: &[JobType]) -> Result<Vec<(JobType, u64)>> {
        let types = sanitize(types);
        let counts = self.backend.get_counts(&types, None).await?;
        Ok(types.into_iter().zip(counts).collect())
    }

    /// Samples the counts of `types` into the `bullmq.queue.jobs` gauge, one series per state
    /// (upstream: `recordJobCountsMetric`); all states when `types` is empty.
    pub async fn record_job_counts_metric(&self, types: &[JobType]) -> Result<()> {
        for (state, count) in self.get_job_counts(types).await? {
            crate::telemetry::metrics::queue_jobs(self.name.as_str(), state.as_str(), count);
        }
        Ok(())
    }

    /// The sum of the counts of `types`.
    pub async fn get_job_count_by_types(&self, types: &[JobType]) -> Result<u64> {
        Ok(self
            .get_job_counts(types)
            .await?
            .iter()
            .map(|(_, n)| n)
            .sum())
    }

    /// Jobs still to be processed: waiting, delayed, prioritized and waiting for children.
    pub async fn count(&self) -> Result<u64> {
        let types = [
            JobState::Waiting,
            JobState::Delayed,
            JobState::Prioritized,
            JobState::WaitingChildren,
        ];
        self.get_job_count_by_types(&types.map(JobType::from)).await
    }

    /// Delayed jobs, only those due before `before_ms` (Unix ms) when given.
    pub async fn get_delayed_count(&self, before_ms: Option<u64>) -> Result<u64> {
        let counts = self
            .backend
            .get_counts(&[JobState::Delayed.into()], before_ms)
            .await?;
        Ok(counts.first().copied().unwrap_or(0))
    }

    /// Waiting jobs per priority (duplicates asked for once).
    pub async fn get_counts_per_priority(&self, priorities: &[u32]) -> Result<Vec<(u32, u64)>> {
        let mut unique: Vec<u32> = Vec::with_capacity(priorities.len());
        for p in priorities {
            if !unique.contains(p) {
                unique.push(*p);
            }
        }
        let counts = self.backend.get_counts_per_priority(&unique).await?;
        Ok(unique.into_iter().zip(counts).collect())
    }

    /// The job's state; `None` when there is no such job.
    pub async fn get_job_state(&self, id: &JobId) -> Result<Option<JobState>> {
        self.backend.get_state(id).await
    }

    /// A page of a job's log (upstream's default: everything, oldest first).
    pub async fn get_job_logs(&self, id: &JobId, range: Range) -> Result<JobLogs> {
        self.backend.get_job_logs(id, range).await
    }

    /// How long the queue stays rate limited (zero when it is not).
    pub async fn get_rate_limit_ttl(&self, max_jobs: Option<u64>) -> Result<Duration> {
        self.backend.get_rate_limit_ttl(max_jobs).await
    }

    /// The job that holds a deduplication id.
    pub async fn get_deduplication_job_id(&self, deduplication_id: &str) -> Result<Option<JobId>> {
        self.backend
            .get_deduplication_job_id(deduplication_id)
            .await
    }

    /// A page of a parent's children of one kind, with the child jobs themselves (upstream:
    /// `Queue#getDependencies`): items `start..=end`, or to the last one when `end` is `None`.
    ///
    /// Items are child keys, with the return value (JSON text) for processed children and the
    /// failure reason for ignored ones. Upstream reads the unprocessed set for every kind but
    /// `processed`; here each kind reads its own list, so `Ignored` pages the ignored failures.
    /// Failed children are a sorted set the store's pager may not support.
    ///
    /// A child whose stored fields cannot be read (another runtime wrote them oddly) does not
    /// fail the page, as it would in Node.js: its item stays, its job is left out of
    /// `jobs` and named in the page's `undecodable` with the reason, as
    /// [`get_jobs_checked`](Self::get_jobs_checked) reports them.
    pub async fn get_dependencies(
        &self,
        parent: &JobId,
        kind: DependencyKind,
        start: u64,
        end: Option<u64>,
    ) -> Result<Page> {
        let end = end.unwrap_or(u64::MAX);
        self.backend.paginate(parent, kind, start, end, true).await
    }

    /// Whether the queue's global concurrency is reached.
    pub async fn is_maxed(&self) -> Result<bool> {
        self.backend.is_maxed().await
    }
}

impl<B: QueueMeta> Queue<B> {
    /// Whether the queue is paused.
    pub async fn is_paused(&self) -> Result<bool> {
        self.backend.has_queue_meta_field("paused").await
    }

    /// The global concurrency, if set.
    pub async fn get_global_concurrency(&self) -> Result<Option<u64>> {
        Ok(number(
            self.backend
                .get_queue_meta_field("concurrency")
                .await?
                .as_ref(),
        ))
    }

    /// The global rate limit, if both of its fields are set.
    pub async fn get_global_rate_limit(&self) -> Result<Option<RateLimiter>> {
        let fields = self
            .backend
            .get_queue_meta_fields(&["max", "duration"])
            .await?;
        let max = number(fields.first().and_then(Option::as_ref));
        let duration = number(fields.get(1).and_then(Option::as_ref));
        Ok(max.zip(duration).map(|(max, ms)| RateLimiter {
            max,
            duration: Duration::from_millis(ms),
        }))
    }

    /// The queue's configuration.
    pub async fn get_meta(&self) -> Result<QueueMetaInfo> {
        let mut fields: BTreeMap<String, String> =
            self.backend.get_queue_meta().await?.into_iter().collect();
        Ok(QueueMetaInfo {
            paused: fields.remove("paused").as_deref() == Some("1"),
            concurrency: number(fields.remove("concurrency").as_ref()),
            max: number(fields.remove("max").as_ref()),
            duration: number(fields.remove("duration").as_ref()),
            max_len_events: number(fields.remove("opts.maxLenEvents").as_ref()),
            version: fields.remove("version"),
            other: fields,
        })
    }

    /// The `version` the queue's meta holds (`bullmq:6.7.6` once any client wrote it).
    pub async fn get_version(&self) -> Result<Option<String>> {
        self.write_meta().await?;
        self.backend.get_queue_meta_field("version").await
    }
}
