//! `Schedulers`: job schedulers and their pending iterations.

use std::time::Duration;

use bullmq_core::backend::{AddJobSchedulerArgs, Queries, Schedulers};
use bullmq_core::scheduling::RepeatOptions;
use bullmq_core::{JobId, JobOptions, JobState};

use super::{Sec, T0};
use crate::store::Store;

/// Upserts scheduler `id` on cron `pattern`, its iteration due at `next`: a job named `report`
/// with data `{"a":1}` and three attempts. Answers the iteration's id and delay.
async fn upsert<S: Store>(s: &Sec<S>, id: &str, pattern: &str, next: u64) -> (JobId, Duration) {
    let schedule = RepeatOptions {
        pattern: Some(pattern.to_owned()),
        ..RepeatOptions::default()
    };
    let args = AddJobSchedulerArgs {
        scheduler_id: id.to_owned(),
        next_millis: next,
        template_name: "report".to_owned(),
        template_data: r#"{"a":1}"#.to_owned(),
        template_opts: JobOptions::new().attempts(3),
        schedule: schedule.clone(),
        delayed_job_opts: JobOptions::new().attempts(3).repeat(schedule),
        producer_id: None,
    };
    s.b.add_job_scheduler(&args).await.unwrap()
}

pub async fn a_scheduler_is_stored_read_listed_and_counted<S: Store>() {
    let s = Sec::<S>::new().await;
    let next = T0 + 60_000;
    let (iteration, delay) = upsert(&s, "tick", "* * * * *", next).await;
    assert_eq!(iteration.as_str(), format!("repeat:tick:{next}"));
    assert_eq!(delay, Duration::from_secs(60));

    let record = s.b.get_job_scheduler("tick").await.unwrap().unwrap();
    assert_eq!(record.id, "tick");
    assert_eq!(record.name, "report");
    assert_eq!(record.next_millis, Some(next));
    assert_eq!(record.schedule.pattern.as_deref(), Some("* * * * *"));
    assert_eq!(record.iteration_count, 1);
    assert_eq!(record.template_data.as_deref(), Some(r#"{"a":1}"#));
    assert_eq!(record.template_opts.unwrap().attempts, Some(3));

    assert_eq!(s.state(&iteration).await, Some(JobState::Delayed));
    let job = s.job(&iteration).await;
    assert_eq!(job.name, "report");
    assert_eq!(job.data, r#"{"a":1}"#);
    assert_eq!(job.opts.attempts, Some(3));
    assert_eq!(job.delay, Duration::from_secs(60));

    assert!(s.b.is_job_scheduler("tick").await.unwrap());
    assert!(!s.b.is_job_scheduler("tock").await.unwrap());
    assert!(s.b.get_job_scheduler("tock").await.unwrap().is_none());

    let late = T0 + 3_600_000;
    upsert(&s, "late", "0 * * * *", late).await;
    assert_eq!(s.b.get_job_schedulers_count().await.unwrap(), 2);
    let tick = ("tick".to_owned(), next);
    let later = ("late".to_owned(), late);
    assert_eq!(
        s.b.get_job_schedulers_range(0, -1, true).await.unwrap(),
        [tick, later.clone()]
    );
    assert_eq!(
        s.b.get_job_schedulers_range(0, 0, false).await.unwrap(),
        std::slice::from_ref(&later)
    );
    assert_eq!(
        s.b.get_job_schedulers_range(1, 5, true).await.unwrap(),
        [later]
    );
    assert!(
        s.b.get_job_schedulers_range(3, 1, true)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn upsert_again_replaces_the_pending_iteration<S: Store>() {
    let s = Sec::<S>::new().await;
    let (first, _) = upsert(&s, "tick", "* * * * *", T0 + 60_000).await;
    let (second, _) = upsert(&s, "tick", "*/2 * * * *", T0 + 120_000).await;
    assert_ne!(first, second);
    assert_eq!(s.state(&first).await, None, "the old iteration is gone");
    assert_eq!(s.state(&second).await, Some(JobState::Delayed));
    let record = s.b.get_job_scheduler("tick").await.unwrap().unwrap();
    assert_eq!(record.next_millis, Some(T0 + 120_000));
    assert_eq!(record.schedule.pattern.as_deref(), Some("*/2 * * * *"));
    assert_eq!(s.b.get_job_schedulers_count().await.unwrap(), 1);
}

pub async fn removing_a_scheduler_removes_its_pending_iteration<S: Store>() {
    let s = Sec::<S>::new().await;
    let (iteration, _) = upsert(&s, "late", "0 * * * *", T0 + 3_600_000).await;
    assert!(s.b.remove_job_scheduler("late").await.unwrap());
    assert_eq!(s.state(&iteration).await, None);
    assert!(s.b.get_job(&iteration).await.unwrap().is_none());
    assert!(!s.b.is_job_scheduler("late").await.unwrap());
    assert_eq!(s.b.get_job_schedulers_count().await.unwrap(), 0);
    assert!(!s.b.remove_job_scheduler("late").await.unwrap());
}
