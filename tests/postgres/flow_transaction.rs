//! A flow added inside the caller's PostgreSQL transaction exists only if it commits.

#![allow(clippy::unwrap_used, unreachable_pub)]

use crate::support::postgres::{SchemaGuard, admin};
use bullmq::backend::Lifecycle as _;
use bullmq::postgres::PostgresBackend;
use bullmq::postgres::sqlx::Connection as _;
use bullmq::{AddFlowInTransaction as _, FlowJob, FlowProducer, JobState, Queue, QueueName};
use serde_json::json;

fn tree(queue: &QueueName) -> FlowJob {
    FlowJob::new(queue.clone(), "invoice", json!({"order": 42}))
        .child(FlowJob::new(queue.clone(), "line", json!({"sku": "A"})))
        .child(FlowJob::new(queue.clone(), "line", json!({"sku": "B"})))
}

#[tokio::test]
async fn a_flow_commits_and_rolls_back_with_the_callers_transaction() {
    let schema = SchemaGuard::new("flowtx");
    let name = QueueName::new("billing").unwrap();
    let backend: PostgresBackend = schema.backend(name.as_str()).await;
    let flows = FlowProducer::new(backend.clone());
    let queue =
        Queue::try_new(name.clone(), backend.clone()).expect("the backend is bound to this queue");

    let mut conn = admin().await;
    let mut tx = conn.begin().await.unwrap();
    let rolled_back = flows.add_in(&mut tx, tree(&name)).await.unwrap();
    tx.rollback().await.unwrap();
    assert!(queue.get_job(&rolled_back.job.id).await.unwrap().is_none());
    assert_eq!(queue.count().await.unwrap(), 0);

    let mut tx = conn.begin().await.unwrap();
    let node = flows.add_in(&mut tx, tree(&name)).await.unwrap();
    assert!(
        queue.get_job(&node.job.id).await.unwrap().is_none(),
        "visible before commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(
        queue.get_job_state(&node.job.id).await.unwrap(),
        Some(JobState::WaitingChildren)
    );
    for child in &node.children {
        assert_eq!(
            queue.get_job_state(&child.job.id).await.unwrap(),
            Some(JobState::Waiting)
        );
    }
    backend.close(false).await.unwrap();
}
