//! `Blocking` for PostgreSQL: the worker's wait for work, as upstream's `waitForJob`.
//!
//! The wait listens on `bullmq_jobs` (producers notify it with the queue name), then looks:
//! a waiting job wakes it at once (`has_waiting_job`; a notification sent before the `LISTEN`
//! is not lost), the next delayed job shortens it (`next_delay`; a delayed job's due time is
//! announced by nobody), and one already due ends it. Otherwise it waits for a notification
//! for the queue, or the timeout.
//!
//! Unlike upstream, it does not depend on the `LISTEN` connection: while that connection
//! cannot be had, or after it dropped (notifications may have been missed), the wait looks
//! again every poll interval, and once more when listening resumes; with polling forced
//! (PgBouncer in transaction pooling, where `LISTEN` hears nothing) it only polls.

use std::time::Duration;

use bullmq_core::Result;
use bullmq_core::backend::{Blocking, Marker};
use tokio::time::Instant;

use super::watch::{Watch, Woken};
use super::{PostgresBackend, one_value};
use crate::connection::listener::Channel;
use crate::sql::commands;

/// What a look at the queue found.
enum Found {
    /// A job can be taken now.
    Job,
    /// A delayed job is due: the caller's fetch promotes it.
    Due,
    /// Nothing yet (the deadline may have been brought forward to the next delayed job).
    Nothing,
}

/// The marker of "jobs are ready" (upstream's PostgreSQL backend answers score 0 too).
fn ready() -> Marker {
    Marker {
        member: "0".to_owned(),
        score: 0,
    }
}

impl PostgresBackend {
    /// Whether a job waits (`has_waiting_job`), else when the next delayed job is due
    /// (`next_delay`), bringing `deadline` forward to it. A failed look counts as nothing
    /// found, as upstream: the wait goes on and the caller's fetch meets the failure.
    async fn look_for_work(&self, deadline: &mut Instant) -> Found {
        match self.has_waiting_job().await {
            Ok(true) => return Found::Job,
            Ok(false) => {}
            Err(err) => tracing::debug!(error = %err, "bullmq: has_waiting_job failed"),
        }
        match self.next_delay().await {
            Ok(Some(at)) => {
                let due_in = at.saturating_sub(self.now_ms());
                if due_in <= 0 {
                    return Found::Due;
                }
                let due_in = Duration::from_millis(u64::try_from(due_in).unwrap_or(u64::MAX));
                if let Some(due) = Instant::now().checked_add(due_in) {
                    *deadline = (*deadline).min(due);
                }
            }
            Ok(None) => {}
            Err(err) => tracing::debug!(error = %err, "bullmq: next_delay failed"),
        }
        Found::Nothing
    }

    async fn has_waiting_job(&self) -> Result<bool> {
        const CONTEXT: &str = "look for a waiting job";
        let rows = self.queue_rows(commands::HAS_WAITING_JOB, CONTEXT).await?;
        let present: Option<bool> = one_value(rows, "present", CONTEXT)?;
        Ok(present.unwrap_or(false))
    }

    async fn next_delay(&self) -> Result<Option<i64>> {
        const CONTEXT: &str = "read the next delayed job's time";
        let rows = self.queue_rows(commands::NEXT_DELAY, CONTEXT).await?;
        one_value(rows, "next_delay", CONTEXT)
    }
}

impl Blocking for PostgresBackend {
    /// A marker (score 0) when a job is ready or the queue was notified; `None` on timeout,
    /// when a delayed job is due, when closing, when interrupted, and for the first wait after
    /// [`disconnect_blocking`](Blocking::disconnect_blocking).
    async fn wait_for_job(&self, timeout: Duration) -> Result<Option<Marker>> {
        // Subscribe first: an interrupt or notification from here on is seen.
        let mut watch = Watch::start(self, Channel::Jobs, false);
        if self.state.is_closing() || watch.interrupted() {
            return Ok(None);
        }
        // Upstream refuses waits until `reconnect_blocking`; the core worker's `resume` does
        // not reconnect, so refusing more than the one wait that may race a close would have
        // a resumed worker spin. One refusal closes the race all the same.
        if self
            .state
            .blocking_disconnected
            .swap(false, std::sync::atomic::Ordering::SeqCst)
        {
            return Ok(None);
        }
        let mut deadline = Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        loop {
            let found = tokio::select! {
                biased;
                () = watch.until_interrupted() => return Ok(None),
                found = self.look_for_work(&mut deadline) => found,
            };
            match found {
                Found::Job => return Ok(Some(ready())),
                Found::Due => return Ok(None),
                Found::Nothing => {}
            }
            match watch.wait(deadline).await {
                Woken::Heard => return Ok(Some(ready())),
                Woken::Look => {}
                Woken::Deadline | Woken::Interrupted => return Ok(None),
            }
        }
    }

    /// Ends the wait in flight (it answers `None`) and refuses the next one (see
    /// [`wait_for_job`](Blocking::wait_for_job)). The `LISTEN` connection stays open: a
    /// `QueueEvents` on a clone may be using it.
    async fn disconnect_blocking(&self, _wait: bool) -> Result<()> {
        self.state
            .blocking_disconnected
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.state.interrupt(false);
        Ok(())
    }

    /// Lets waits run again, and (re)opens the `LISTEN` connection in the background.
    async fn reconnect_blocking(&self) -> Result<()> {
        self.state
            .blocking_disconnected
            .store(false, std::sync::atomic::Ordering::SeqCst);
        self.want_notifications(Channel::Jobs);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Forced polling needs the crate's own switch (`ConnState::set_polling`), hence a unit
    //! test on the test server rather than one in `tests/`.
    #![allow(clippy::unwrap_used)]

    use std::time::{Duration, Instant};

    use bullmq_core::QueueName;
    use bullmq_core::backend::{Blocking, ClientRole, Lifecycle};
    use sqlx::types::Json;

    use crate::sql::commands;
    use crate::{PostgresBackend, PostgresOptions, SchemaName};

    fn database_url() -> String {
        std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
    }

    /// Drops the schema when the test ends, however it ends.
    struct DropSchema(String);

    impl Drop for DropSchema {
        fn drop(&mut self) {
            let sql = format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.0);
            let dropping = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let pool = sqlx::PgPool::connect(&database_url()).await.unwrap();
                    sqlx::raw_sql(&sql).execute(&pool).await.unwrap();
                    pool.close().await;
                });
            });
            let _ = dropping.join();
        }
    }

    async fn sessions(b: &PostgresBackend, name: &str) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
            .bind(name)
            .fetch_one(b.pool())
            .await
            .unwrap()
    }

    async fn add_job(b: &PostgresBackend, id: &str) {
        let opts = serde_json::json!({ "attempts": 1 });
        let _: String = sqlx::query_scalar(commands::ADD_JOB.text)
            .bind(b.queue_name())
            .bind(id)
            .bind("test")
            .bind(Json(serde_json::json!({})))
            .bind(Json(opts))
            .bind(0_i32)
            .bind(0_i64)
            .bind(b.now_ms())
            .bind(1_i32)
            .bind(None::<String>)
            .bind(None::<String>)
            .bind(None::<String>)
            .bind(None::<String>)
            .bind(None::<String>)
            .bind(false)
            .fetch_one(b.pool())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn forced_polling_finds_jobs_without_listening() {
        let name = format!("blk_poll_{}", uuid::Uuid::new_v4().simple());
        let _drop = DropSchema(name.clone());
        let options = PostgresOptions::new(database_url())
            .schema(SchemaName::new(name.clone()).unwrap())
            .migrate(true);
        let b = PostgresBackend::connect(&options, QueueName::new(name.clone()).unwrap())
            .await
            .unwrap();
        b.state.set_polling(true, Some(Duration::from_millis(100)));
        assert_eq!(b.state.poll_interval(), Duration::from_millis(100));

        // No LISTEN connection: the name is only remembered.
        let role = ClientRole::Worker {
            name: Some("p".to_owned()),
        };
        let client = b.client_name(&role);
        b.set_client_role(role).await.unwrap();
        assert_eq!(sessions(&b, &client).await, 0);

        // A notification is not heard...
        let wait = {
            let b = b.clone();
            tokio::spawn(async move {
                let start = Instant::now();
                (
                    b.wait_for_job(Duration::from_millis(800)).await.unwrap(),
                    start.elapsed(),
                )
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        sqlx::query("SELECT pg_notify('bullmq_jobs', $1)")
            .bind(b.queue_name())
            .execute(b.pool())
            .await
            .unwrap();
        let (marker, took) = wait.await.unwrap();
        assert_eq!(marker, None);
        assert!(took >= Duration::from_millis(800), "{took:?}");

        // ...but a job added meanwhile is found within the poll interval.
        let wait = {
            let b = b.clone();
            tokio::spawn(async move { b.wait_for_job(Duration::from_secs(20)).await.unwrap() })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!wait.is_finished());
        let added = Instant::now();
        add_job(&b, "1").await;
        let marker = tokio::time::timeout(Duration::from_secs(3), wait)
            .await
            .expect("found by polling")
            .unwrap();
        assert!(marker.is_some());
        assert!(added.elapsed() < Duration::from_secs(3));
        b.close(false).await.unwrap();
        b.connection().close().await;
    }
}
