//! `remove` at the backend's clock.
//!
//! Upstream's `remove` function decides whether a job (with `removeChildren`, its pending
//! subtree too) is locked by comparing `locked_until_ms` with the server's
//! `clock_timestamp()`, and takes no time argument. Every lock is stamped with the clock of
//! the backend that took or extended it (`$now + lock duration`), so with a backend clock
//! apart from the server's the two disagree: a backend behind the server sees a held lock as
//! expired (a job removed under its worker), one ahead keeps refusing after the lock ran out.
//!
//! So, in one transaction on one connection, before upstream's `remove` runs unchanged:
//!
//! 1. the locks of the job and its pending subtree that have run out at the backend's clock
//!    are cleared (a lock past its time holds nothing, as an expired Redis lock key);
//! 2. if one still holds at the backend's clock, the transaction is rolled back and the
//!    answer is 0 (locked), as upstream's;
//! 3. otherwise upstream's `remove` runs; it finds no lock left and removes.
//!
//! The rows read are locked (`FOR UPDATE`) from step 1 on, so no worker takes or extends a
//! lock between the check and the removal. A parent released by the removal is still
//! stamped by upstream's function at the server's time (no argument carries ours).

use bullmq_core::{JobId, Result};
use sqlx::Row as _;
use sqlx::{Connection as _, PgConnection};

use super::{PostgresBackend, refusal, sql_error};
use crate::sql::commands;

/// The job and, when `$3`, its subtree through pending dependencies (upstream's walk),
/// row-locked; the locks run out at `$4` (the backend's now, Unix ms) cleared, and whether a
/// lock still holds then. `$1` queue, `$2` id.
const CLEAR_EXPIRED_LOCKS: &str = "WITH RECURSIVE subtree AS (
    SELECT $1::text AS q, $2::text AS id
  UNION
    SELECT d.child_queue, d.child_id
      FROM subtree s
      JOIN job_dependency d
        ON $3 AND d.parent_queue = s.q AND d.parent_id = s.id AND d.status = 'pending'
),
held AS (
  SELECT j.queue, j.id, j.lock_token, j.locked_until_ms
    FROM job j JOIN subtree s ON j.queue = s.q AND j.id = s.id
   WHERE j.lock_token IS NOT NULL
     FOR UPDATE OF j
),
cleared AS (
  UPDATE job j SET lock_token = NULL
    FROM held h
   WHERE j.queue = h.queue AND j.id = h.id
     AND COALESCE(h.locked_until_ms, 0) <= $4
)
SELECT EXISTS (SELECT 1 FROM held WHERE locked_until_ms > $4) AS locked";

impl PostgresBackend {
    /// Removes `job_id` (and its children when `remove_children`) unless it, or a pending
    /// descendant, is locked at this backend's clock; how many jobs went (0: locked or
    /// missing).
    pub(super) async fn remove_at_clock(
        &self,
        job_id: &JobId,
        remove_children: bool,
    ) -> Result<i32> {
        // A refusal is the server's answer; any other failure may have left the session in
        // doubt, so it is not reused.
        self.lanes()
            .with_lane(
                "remove",
                async |conn| self.remove_on(conn, job_id, remove_children).await,
                |outcome| matches!(outcome, Ok(_) | Err(bullmq_core::Error::Script(_))),
            )
            .await
    }

    async fn remove_on(
        &self,
        conn: &mut PgConnection,
        job_id: &JobId,
        remove_children: bool,
    ) -> Result<i32> {
        let mut tx = conn.begin().await.map_err(sql_error("remove"))?;
        let locked: bool = sqlx::query(CLEAR_EXPIRED_LOCKS)
            .bind(self.queue_name())
            .bind(job_id.as_str())
            .bind(remove_children)
            .bind(self.now_ms())
            .fetch_one(&mut *tx)
            .await
            .and_then(|row| row.try_get("locked"))
            .map_err(sql_error("remove"))?;
        if locked {
            tx.rollback().await.map_err(sql_error("remove"))?;
            return Ok(0);
        }
        let removed: i32 = match self
            .job_at(job_id)
            .keyed(commands::REMOVE)
            .bind(remove_children)
            .fetch_one(&mut *tx)
            .await
            .and_then(|row| row.try_get("n"))
        {
            Ok(removed) => removed,
            Err(err) => {
                // End the aborted transaction before the connection is pooled again: a
                // dropped sqlx transaction only queues its ROLLBACK, and the rows locked above
                // would stay locked until the connection is next used.
                tx.rollback().await.map_err(sql_error("remove"))?;
                return Err(refusal("remove", Some(job_id.as_str()))(err));
            }
        };
        if removed > 0 {
            tx.commit().await.map_err(sql_error("remove"))?;
        } else {
            // Nothing went (the job is gone): leave its rows as they were.
            tx.rollback().await.map_err(sql_error("remove"))?;
        }
        Ok(removed)
    }
}
