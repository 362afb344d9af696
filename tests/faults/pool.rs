//! R26: a pool worker whose connection keeps failing. The pool's own redis-server is killed:
//! the worker's waits and fetches fail, the pool restarts it with fresh connections once it has
//! been unhealthy past `unhealthy_after`, each restart fails (the server refuses connections),
//! and past the restart budget the pool reports itself failed instead of looping.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bullmq::pool::{PoolEvent, Supervision, WorkerPool};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::telemetry::RunState;
use bullmq::{
    ActiveJob, CancellationToken, JobOptions, JobState, Prefix, Queue, QueueName, WorkerOptions,
};
use serde_json::json;

use crate::support::PrivateRedis;
use crate::support::wait::{eventually, next_event};

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r26_a_worker_that_keeps_failing_is_restarted_then_the_pool_fails() {
    let mut server = PrivateRedis::start();
    let name = QueueName::new("r26").unwrap();
    let options = RedisOptions::new(server.url()).prefix(Prefix::new("bull").unwrap());
    let backend = RedisBackend::connect(&options, name.clone()).await.unwrap();
    let queue = Queue::try_new(name.clone(), backend).expect("the backend is bound to this queue");
    let pool = WorkerPool::builder(
        queue,
        |_job: ActiveJob<RedisBackend>, _: CancellationToken| async { Ok(json!("done")) },
    )
    .options(
        WorkerOptions::new()
            .drain_delay(Duration::from_millis(200))
            .run_retry_delay(Duration::from_millis(100)),
    )
    .supervision(
        Supervision::new(2, Duration::from_secs(60))
            .backoff(Duration::from_millis(50), Duration::from_millis(100))
            .unhealthy_after(Some(Duration::from_millis(500))),
    )
    .build()
    .await
    .unwrap();
    // It works before the fault.
    let id = pool
        .queue()
        .add("before", &json!({}), JobOptions::new())
        .await
        .unwrap()
        .id;
    eventually("the first job completed", WAIT, || async {
        pool.queue().get_job_state(&id).await.ok().flatten() == Some(JobState::Completed)
    })
    .await;
    assert!(pool.health().await.is_ready());

    let mut events = pool.events();
    server.kill_server();
    let mut restarts = 0;
    loop {
        match next_event(&mut events, "a restart or the failure", WAIT, |e| {
            matches!(e, PoolEvent::Restarting { .. } | PoolEvent::Failed { .. })
        })
        .await
        {
            PoolEvent::Restarting { error, .. } => {
                restarts += 1;
                assert!(restarts <= 2, "past the budget of 2: {error}");
            }
            PoolEvent::Failed { error } => {
                assert!(!error.to_string().is_empty());
                break;
            }
            other => unreachable!("{other:?}"),
        }
    }
    assert_eq!(restarts, 2, "restarted within the budget, then gave up");
    let health = pool.health().await;
    assert_eq!(health.state, RunState::Failed);
    assert!(!health.is_live());
    assert_eq!(health.running, 0, "the failing place was given up");
    pool.close().await;
}
