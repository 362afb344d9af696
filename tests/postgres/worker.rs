//! The worker's start on PostgreSQL: its first stalled check runs before its first fetch, as
//! upstream's `run` orders them, so a job it takes at start is never marked stalled by its own
//! check.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bullmq::postgres::sqlx::{self, Row as _};
use bullmq::{JobOptions, JobState, Worker, WorkerOptions};
use serde_json::json;

use crate::support::postgres::{SchemaGuard, admin};
use crate::support::wait::eventually;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_job_taken_at_start_is_not_marked_stalled_by_the_first_check() {
    let schema = SchemaGuard::new("stallorder");
    let mut sql = admin().await;
    // The race lost about one start in six before the order was fixed: ten starts.
    for round in 0..10 {
        let name = format!("start{round}");
        let queue = schema.queue(&name).await;
        let id = queue
            .add("j", &json!({}), JobOptions::new())
            .await
            .unwrap()
            .id;
        let (release, held) = tokio::sync::oneshot::channel::<()>();
        let held = std::sync::Mutex::new(Some(held));
        let worker = Worker::new(
            queue.name().clone(),
            schema.backend(&name).await,
            WorkerOptions::new().stalled_interval(Duration::from_secs(60)),
            move |_job, _| {
                let held = held.lock().unwrap().take();
                async move {
                    if let Some(held) = held {
                        let _ = held.await;
                    }
                    Ok(json!(null))
                }
            },
        )
        .await
        .unwrap();
        eventually("the job active", WAIT, || async {
            queue.get_job_state(&id).await.unwrap() == Some(JobState::Active)
        })
        .await;
        let marked: bool = sqlx::query(&format!(
            "SELECT stalled_marked FROM \"{}\".job WHERE queue = $1 AND id = $2",
            schema.as_str()
        ))
        .bind(&name)
        .bind(id.as_str())
        .fetch_one(&mut sql)
        .await
        .unwrap()
        .get(0);
        assert!(
            !marked,
            "round {round}: the first check ran after the fetch"
        );
        let _ = release.send(());
        worker.close().await;
    }
}
