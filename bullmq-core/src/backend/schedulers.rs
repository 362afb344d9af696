//! Job schedulers: the stored schedule and its next iteration.

use std::future::Future;
use std::time::Duration;

use crate::options::JobOptions;
use crate::options::RepeatOptions;
use crate::{JobId, Result};

/// Arguments of [`Schedulers::add_job_scheduler`].
#[derive(Debug, Clone, PartialEq)]
pub struct AddJobSchedulerArgs {
    /// The scheduler's id.
    pub scheduler_id: String,
    /// When the next iteration runs, Unix ms.
    pub next_millis: u64,
    /// The template job's name.
    pub template_name: String,
    /// The template's data as JSON text.
    pub template_data: String,
    /// The template's options, stored once and reused for every iteration.
    pub template_opts: JobOptions,
    /// The schedule itself (`every` or `pattern`, `tz`, dates, `limit`, `offset`).
    pub schedule: RepeatOptions,
    /// The options of the iteration job created now (template plus `jobId`, `delay`, `repeat`).
    pub delayed_job_opts: JobOptions,
    /// The producer that upserts, to settle concurrent upserts.
    pub producer_id: Option<String>,
}

/// Arguments of [`Schedulers::update_job_scheduler_next_millis`].
#[derive(Debug, Clone, PartialEq)]
pub struct NextIterationArgs {
    /// The scheduler's id.
    pub scheduler_id: String,
    /// When the next iteration runs, Unix ms.
    pub next_millis: u64,
    /// The template's data as JSON text.
    pub template_data: String,
    /// The options of the iteration job.
    pub delayed_job_opts: JobOptions,
    /// The producer (worker) advancing the schedule.
    pub producer_id: Option<String>,
}

/// A stored job scheduler.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobSchedulerRecord {
    /// The scheduler's id.
    pub id: String,
    /// The template job's name.
    pub name: String,
    /// When the next iteration runs, Unix ms.
    pub next_millis: Option<u64>,
    /// The schedule.
    pub schedule: RepeatOptions,
    /// Iterations produced so far (`ic`).
    pub iteration_count: u64,
    /// The template's data as JSON text.
    pub template_data: Option<String>,
    /// The template's options.
    pub template_opts: Option<JobOptions>,
}

/// Job schedulers (upstream: `addJobScheduler`, `updateJobSchedulerNextMillis`,
/// `removeJobScheduler`, `getJobScheduler`, `isJobScheduler`, `getJobSchedulersRange`,
/// `getJobSchedulersCount`).
pub trait Schedulers: Send + Sync {
    /// Stores a scheduler and adds its next iteration; returns that job's id and delay.
    fn add_job_scheduler(
        &self,
        args: &AddJobSchedulerArgs,
    ) -> impl Future<Output = Result<(JobId, Duration)>> + Send;

    /// Adds the next iteration after one ran; `None` when another producer already did.
    fn update_job_scheduler_next_millis(
        &self,
        args: &NextIterationArgs,
    ) -> impl Future<Output = Result<Option<JobId>>> + Send;

    /// Removes a scheduler and its pending iteration; true if it existed.
    fn remove_job_scheduler(&self, scheduler_id: &str)
    -> impl Future<Output = Result<bool>> + Send;

    /// Reads one scheduler.
    fn get_job_scheduler(
        &self,
        scheduler_id: &str,
    ) -> impl Future<Output = Result<Option<JobSchedulerRecord>>> + Send;

    /// True if `id` names a scheduler.
    fn is_job_scheduler(&self, id: &str) -> impl Future<Output = Result<bool>> + Send;

    /// Scheduler ids with their next run (Unix ms), ordered by next run.
    fn get_job_schedulers_range(
        &self,
        start: i64,
        end: i64,
        asc: bool,
    ) -> impl Future<Output = Result<Vec<(String, u64)>>> + Send;

    /// How many schedulers the queue has.
    fn get_job_schedulers_count(&self) -> impl Future<Output = Result<u64>> + Send;
}
