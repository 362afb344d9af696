//! A worker's first stalled check runs before its first fetch, on every store: a job taken at
//! start is never marked stalled by that check.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use bullmq_core::backend::Backend;
use bullmq_core::worker::{Worker, WorkerOptions};
use bullmq_core::{JobId, JobOptions, JobState, Queue, QueueName};
use serde_json::json;

use crate::wait::eventually;

/// Ten times (the race lost about one start in six before the order was fixed): a job is added
/// to queue `start<round>`, a worker (stalled check every 60 s) takes it and holds it, and
/// `marked(queue, id)` must say the first check did not mark it stalled. `connect(queue)`
/// gives a new backend for the queue.
pub async fn assert_a_job_taken_at_start_is_not_marked_stalled<B, C, CF, M, MF>(
    connect: C,
    marked: M,
) where
    B: Backend,
    C: Fn(String) -> CF,
    CF: Future<Output = B>,
    M: Fn(String, JobId) -> MF,
    MF: Future<Output = bool>,
{
    for round in 0..10 {
        let name = format!("start{round}");
        let queue = Queue::try_new(QueueName::new(&name).unwrap(), connect(name.clone()).await)
            .expect("the backend is bound to this queue");
        let id = queue
            .add("j", &json!({}), JobOptions::new())
            .await
            .unwrap()
            .id;
        let (release, held) = tokio::sync::oneshot::channel::<()>();
        let held = Mutex::new(Some(held));
        let worker = Worker::new(
            queue.name().clone(),
            connect(name.clone()).await,
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
        eventually("the job active", Duration::from_secs(20), || async {
            queue.get_job_state(&id).await.unwrap() == Some(JobState::Active)
        })
        .await;
        assert!(
            !marked(name, id).await,
            "round {round}: the first check ran after the fetch"
        );
        let _ = release.send(());
        worker.close().await;
    }
}
