//! Enqueueing inside the caller's own transaction (docs/RELIABILITY.md R11): the job exists if and
//! only if that transaction commits, workers cannot see it before, and the `NOTIFY` that wakes
//! them is delivered at commit. No other BullMQ implementation offers this.
//!
//! ```no_run
//! # async fn run(queue: bullmq_core::Queue<bullmq_postgres::PostgresBackend>, pool: sqlx::PgPool)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use bullmq_core::JobOptions;
//! use bullmq_postgres::AddInTransaction as _;
//!
//! let mut tx = pool.begin().await?;
//! sqlx::query("INSERT INTO orders (id, total) VALUES ($1, $2)")
//!     .bind(42_i64)
//!     .bind(1999_i64)
//!     .execute(&mut *tx)
//!     .await?;
//! // Sent only if the order is stored, and processed only after it is.
//! queue
//!     .add_in(&mut tx, "send-receipt", &serde_json::json!({ "order": 42 }), JobOptions::new())
//!     .await?;
//! tx.commit().await?;
//! # Ok(()) }
//! ```

use bullmq_core::backend::{FlowNode, ParentKeyOpts};
use std::future::Future;

use bullmq_core::{BulkJob, Job, JobId, JobOptions, Queue, Result, ScriptError};
use serde::Serialize;
use sqlx::PgConnection;

use crate::backend::{PostgresBackend, add_flow_on, add_job_on, add_jobs_on};
use crate::error::wrap;

/// Adding jobs to a PostgreSQL [`Queue`] inside a transaction the caller opened (or on any
/// connection of theirs), on the caller's own connection: `&mut *tx` for a
/// `sqlx::Transaction`.
///
/// The connection may be to the same database with any `search_path`: the queue's schema is
/// selected for these statements only and the caller's setting is put back afterwards.
/// Jobs are checked exactly as [`Queue::add`] checks them, before anything is written.
pub trait AddInTransaction {
    /// [`Queue::add`] on `conn`: the job becomes visible when `conn`'s transaction commits,
    /// and never if it rolls back.
    fn add_in<T: Serialize + ?Sized + Sync>(
        &self,
        conn: &mut PgConnection,
        name: &str,
        data: &T,
        opts: JobOptions,
    ) -> impl Future<Output = Result<Job>> + Send;

    /// [`Queue::add_bulk`] on `conn`, all or nothing with the caller's transaction.
    ///
    /// A job the store refuses (a missing parent) is skipped as in `add_bulk`, and the error
    /// ([`Error::Bulk`](bullmq_core::Error::Bulk)) names the jobs added inside the
    /// transaction: roll it back to add none of them, or commit to keep them.
    fn add_bulk_in<T: Serialize + Send + Sync>(
        &self,
        conn: &mut PgConnection,
        jobs: Vec<BulkJob<T>>,
    ) -> impl Future<Output = Result<Vec<Job>>> + Send;
}

impl AddInTransaction for Queue<PostgresBackend> {
    async fn add_in<T: Serialize + ?Sized + Sync>(
        &self,
        conn: &mut PgConnection,
        name: &str,
        data: &T,
        opts: JobOptions,
    ) -> Result<Job> {
        let mut job = self.prepare_job(name, data, opts)?;
        // The queue's meta is idempotent and not part of the job: written on the pool.
        self.write_meta().await?;
        let backend = self.backend();
        let saved = enter_schema(conn, backend).await?;
        let added = add_job_on(
            &mut *conn,
            backend.queue_name(),
            &job,
            &ParentKeyOpts::of(&job),
        )
        .await;
        job.id = leave_schema(conn, &saved, added).await?;
        Ok(job)
    }

    async fn add_bulk_in<T: Serialize + Send + Sync>(
        &self,
        conn: &mut PgConnection,
        jobs: Vec<BulkJob<T>>,
    ) -> Result<Vec<Job>> {
        let entries = self.prepare_bulk(jobs)?;
        self.write_meta().await?;
        let backend = self.backend();
        let saved = enter_schema(conn, backend).await?;
        let added = add_jobs_on(&mut *conn, backend.queue_name(), &entries).await;
        let ids = leave_schema(conn, &saved, added).await?;
        Ok(entries
            .into_iter()
            .zip(ids)
            .map(|(entry, id)| Job { id, ..entry.job })
            .collect())
    }
}

impl PostgresBackend {
    /// Writes a flow's nodes (parents first, as `FlowProducer` orders them) on `conn`, inside
    /// the caller's transaction: the tree exists if and only if it commits. `bullmq`'s
    /// `FlowProducer::add_in` (features `flow` and `postgres`) builds the nodes and calls this.
    pub async fn add_flow_in(
        &self,
        conn: &mut PgConnection,
        nodes: &[FlowNode],
    ) -> Result<Vec<Result<JobId, ScriptError>>> {
        let saved = enter_schema(conn, self).await?;
        let added = add_flow_on(&mut *conn, nodes).await;
        leave_schema(conn, &saved, added).await
    }
}

/// Points `conn`'s `search_path` at the queue's schema; returns the caller's setting.
///
/// Session-level rather than `SET LOCAL`, so that it also works on a connection outside a
/// transaction; inside one, a rollback undoes it by itself.
async fn enter_schema(conn: &mut PgConnection, backend: &PostgresBackend) -> Result<String> {
    let saved: String = sqlx::query_scalar("SELECT current_setting('search_path')")
        .fetch_one(&mut *conn)
        .await
        .map_err(wrap("read the caller's search_path"))?;
    set_search_path(conn, &backend.connection().schema().quoted()).await?;
    Ok(saved)
}

/// Gives `conn` its `search_path` back, unless the statement failed (a failed statement has
/// aborted the caller's transaction, whose rollback restores the setting).
async fn leave_schema<T>(conn: &mut PgConnection, saved: &str, outcome: Result<T>) -> Result<T> {
    let value = outcome?;
    set_search_path(conn, saved).await?;
    Ok(value)
}

async fn set_search_path(conn: &mut PgConnection, path: &str) -> Result<()> {
    sqlx::query("SELECT set_config('search_path', $1, false)")
        .bind(path)
        .execute(conn)
        .await
        .map_err(wrap("set search_path on the caller's connection"))
        .map(drop)
}
