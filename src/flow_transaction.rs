//! Adding a flow inside the caller's own PostgreSQL transaction (features `flow` and
//! `postgres`): every job of the tree exists if and only if that transaction commits.

use std::future::Future;

use bullmq_core::Result;
use bullmq_flow::{FlowJob, FlowOptions, FlowProducer, JobNode};
use bullmq_postgres::PostgresBackend;
use bullmq_postgres::sqlx::PgConnection;

/// [`FlowProducer::add`] on the caller's connection, usually `&mut *tx` for an open
/// `sqlx::Transaction`: the tree is checked as `add` checks it, then written in one statement
/// on `conn`, so it commits or rolls back with the caller's own writes.
///
/// ```no_run
/// # async fn run(flows: bullmq::FlowProducer<bullmq::postgres::PostgresBackend>,
/// #              pool: bullmq::postgres::sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
/// use bullmq::{AddFlowInTransaction as _, FlowJob};
///
/// let billing = bullmq::QueueName::new("billing")?;
/// let mut tx = pool.begin().await?;
/// let tree = FlowJob::new(billing.clone(), "invoice", serde_json::json!({ "order": 42 }))
///     .child(FlowJob::new(billing, "line", serde_json::json!({ "sku": "A" })));
/// let node = flows.add_in(&mut tx, tree).await?;
/// tx.commit().await?;
/// # Ok(()) }
/// ```
pub trait AddFlowInTransaction {
    /// Adds `flow` on `conn`, inside its transaction.
    fn add_in(
        &self,
        conn: &mut PgConnection,
        flow: FlowJob,
    ) -> impl Future<Output = Result<JobNode>> + Send;

    /// [`add_in`](Self::add_in) with per-queue default options.
    fn add_in_with(
        &self,
        conn: &mut PgConnection,
        flow: FlowJob,
        opts: &FlowOptions,
    ) -> impl Future<Output = Result<JobNode>> + Send;
}

impl AddFlowInTransaction for FlowProducer<PostgresBackend> {
    async fn add_in(&self, conn: &mut PgConnection, flow: FlowJob) -> Result<JobNode> {
        self.add_in_with(conn, flow, &FlowOptions::default()).await
    }

    async fn add_in_with(
        &self,
        conn: &mut PgConnection,
        flow: FlowJob,
        opts: &FlowOptions,
    ) -> Result<JobNode> {
        let backend = self.backend();
        bullmq_flow::__private::add_flow_via(self, flow, opts, |nodes| async move {
            backend.add_flow_in(conn, &nodes).await
        })
        .await
    }
}
