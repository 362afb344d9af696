//! A job scheduler's iteration made straight on a store, for the store tests that need a job
//! which belongs to a scheduler.

use bullmq_core::backend::{AddJobSchedulerArgs, Schedulers};
use bullmq_core::scheduling::RepeatOptions;
use bullmq_core::{JobId, JobOptions};

/// Adds the cron scheduler `s1` (every minute, template `tick`) whose first iteration is due
/// at `next_millis`; answers that iteration's id.
pub async fn cron_iteration<B: Schedulers>(backend: &B, next_millis: u64) -> JobId {
    let schedule = RepeatOptions {
        pattern: Some("* * * * *".to_owned()),
        ..RepeatOptions::default()
    };
    let (iteration, _) = backend
        .add_job_scheduler(&AddJobSchedulerArgs {
            scheduler_id: "s1".to_owned(),
            next_millis,
            template_name: "tick".to_owned(),
            template_data: "{}".to_owned(),
            template_opts: JobOptions::new(),
            schedule: schedule.clone(),
            delayed_job_opts: JobOptions::new().repeat(schedule),
            producer_id: None,
        })
        .await
        .unwrap();
    iteration
}
