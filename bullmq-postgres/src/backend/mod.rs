//! [`PostgresBackend`]: one queue in one schema, through upstream's SQL commands.
//!
//! Each file of this module implements one section of `bullmq_core::backend`, with the same
//! file name as the trait's own file in core (and in `bullmq-redis`). Every command runs the
//! verbatim text of [`crate::sql::commands`] on the pool, whose connections pin the schema's
//! `search_path`; upstream's refusals (`SQLSTATE BM001`, the code in `DETAIL`) come back as
//! [`ScriptError`]s, exactly as the Redis backend reports the Lua scripts' codes.

mod add;
mod admin;
mod blocking;
mod discovery;
mod events;
mod lifecycle;
mod locks;
mod meta;
mod mutations;
mod queries;
mod relay;
mod remove_at;
mod repair;
mod row;
mod rows;
mod schedulers;
mod transitions;
mod watch;

use std::sync::Arc;

use bullmq_core::clock::{Clock, SystemClock};
use bullmq_core::error::{ScriptError, ScriptErrorCode};
use bullmq_core::{JobId, QueueName, Result};
use sqlx::PgPool;

use crate::connection::PostgresConnection;
use crate::options::PostgresOptions;
use crate::wire::{JobAt, to_i64};

pub(crate) use add::{add_flow_on, add_job_on, add_jobs_on};
pub use row::JobRow;
pub(crate) use row::job_from_row;
pub(crate) use rows::{id_column, one_row, one_value};

/// The SQLSTATE upstream's functions raise a refusal with; `DETAIL` carries the code.
const REFUSAL_SQLSTATE: &str = "BM001";

/// The PostgreSQL backend of one queue.
///
/// Cloning is cheap and shares the pool and the dedicated `LISTEN` connection; a
/// [`sibling`](Self::sibling) for another queue shares the pool only.
#[derive(Clone)]
pub struct PostgresBackend {
    conn: PostgresConnection,
    queue: QueueName,
    clock: Arc<dyn Clock>,
    /// The dedicated connection, the closing flag and the client role, shared by clones.
    state: Arc<lifecycle::ConnState>,
    /// The relay namespace this handle is bound to (`RelayStore::relay_handle`).
    relay: Option<Arc<relay::PgRelay>>,
}

impl std::fmt::Debug for PostgresBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresBackend")
            .field("schema", self.conn.schema())
            .field("queue", &self.queue.as_str())
            .finish_non_exhaustive()
    }
}

impl PostgresBackend {
    /// Connects to PostgreSQL for `queue` (migrating first when
    /// [`PostgresOptions::migrate`] is set).
    ///
    /// ```no_run
    /// # async fn run() -> bullmq_core::Result<()> {
    /// use bullmq_core::QueueName;
    /// use bullmq_postgres::{PostgresBackend, PostgresOptions};
    ///
    /// let options = PostgresOptions::new("postgres://postgres@127.0.0.1:5432/app").migrate(true);
    /// let backend = PostgresBackend::connect(&options, QueueName::new("emails")?).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(options: &PostgresOptions, queue: QueueName) -> Result<Self> {
        let conn = PostgresConnection::connect(options).await?;
        Ok(Self::on_connection(conn, queue))
    }

    /// A backend for `queue` on a connection made beforehand (several queues may share it).
    #[must_use]
    pub fn on_connection(conn: PostgresConnection, queue: QueueName) -> Self {
        let state = Arc::new(lifecycle::ConnState::waiting(conn.waiting()));
        Self {
            conn,
            queue,
            clock: Arc::new(SystemClock),
            state,
            relay: None,
        }
    }

    /// Reads time from `clock`: every timestamp the SQL receives, and the time of every
    /// `Queue`, `Worker`, `FlowProducer`, `JobScheduler` and `QueueEvents` built on this
    /// backend ([`Lifecycle::clock`](bullmq_core::backend::Lifecycle::clock)). Set it before
    /// cloning: clones and siblings share the clock they were made with.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// A backend for another queue in the same schema, on the same pool (with a dedicated
    /// connection of its own, opened when it first waits).
    #[must_use]
    pub fn sibling(&self, queue: QueueName) -> Self {
        Self {
            queue,
            state: Arc::new(lifecycle::ConnState::waiting(self.conn.waiting())),
            ..self.clone()
        }
    }

    /// The connection (pool and schema).
    #[must_use]
    pub fn connection(&self) -> &PostgresConnection {
        &self.conn
    }

    /// The queue's name.
    #[must_use]
    pub fn queue(&self) -> &QueueName {
        &self.queue
    }

    /// The pool, for what does not run on [`lanes`](Self::lanes).
    pub(crate) fn pool(&self) -> &PgPool {
        self.conn.pool()
    }

    /// The connections commands run on.
    pub(crate) fn lanes(&self) -> &crate::connection::Lanes {
        self.conn.lanes()
    }

    /// The queue's name as the SQL's `queue` column holds it.
    pub(crate) fn queue_name(&self) -> &str {
        self.queue.as_str()
    }

    /// Where `job_id` is, in this queue, as the commands about one job take it.
    pub(crate) fn job_at<'a>(&'a self, job_id: &'a JobId) -> JobAt<'a> {
        JobAt {
            queue: self.queue_name(),
            id: job_id.as_str(),
        }
    }

    /// Now, Unix ms, from the backend's clock, as SQL's `bigint`.
    pub(crate) fn now_ms(&self) -> i64 {
        to_i64(self.clock.now_ms())
    }
}

/// Wraps a client error with what bullmq was doing (no refusal expected).
pub(crate) fn sql_error(context: &'static str) -> impl FnOnce(sqlx::Error) -> bullmq_core::Error {
    crate::error::wrap(context)
}

/// An answer outside what the command documents, as a protocol error.
pub(crate) fn unexpected(context: &'static str, what: String) -> bullmq_core::Error {
    sql_error(context)(sqlx::Error::Protocol(what))
}

/// Upstream's refusal `code` of `command` about `job_id`, `state` the state it expected.
pub(crate) fn script_error(
    code: ScriptErrorCode,
    command: &'static str,
    job_id: Option<&str>,
    state: Option<&str>,
) -> ScriptError {
    ScriptError {
        code,
        command,
        job_id: job_id.map(str::to_owned),
        parent_key: None,
        state: state.map(str::to_owned),
    }
}

/// A negative code a command answered (rather than raised) as upstream's refusal of
/// `command`, as Node.js's `finishedErrors` builds it; `None` for a code upstream does not
/// define.
pub(crate) fn answered_refusal(
    code: i64,
    command: &'static str,
    job_id: &JobId,
    state: Option<&str>,
) -> Option<bullmq_core::Error> {
    let code = ScriptErrorCode::try_from(code).ok()?;
    Some(script_error(code, command, Some(job_id.as_str()), state).into())
}

/// Maps upstream's refusal (`BM001`, code in `DETAIL`) of `command` about `job_id` to a
/// [`ScriptError`], as Node.js's `mapFinishError` does; any other failure is wrapped with the
/// command's name.
pub(crate) fn refusal<'a>(
    command: &'static str,
    job_id: Option<&'a str>,
) -> impl FnOnce(sqlx::Error) -> bullmq_core::Error + 'a {
    move |err| match refusal_code(&err) {
        Some(code) => {
            let active = matches!(
                code,
                ScriptErrorCode::NotInState | ScriptErrorCode::LockMismatch
            );
            script_error(code, command, job_id, active.then_some("active")).into()
        }
        None => sql_error(command)(err),
    }
}

/// The upstream code of a `BM001` refusal, when `err` is one with a code we know.
pub(crate) fn refusal_code(err: &sqlx::Error) -> Option<ScriptErrorCode> {
    let sqlx::Error::Database(db) = err else {
        return None;
    };
    if db.code().as_deref() != Some(REFUSAL_SQLSTATE) {
        return None;
    }
    let pg = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()?;
    let code: i64 = pg.detail()?.trim().parse().ok()?;
    ScriptErrorCode::try_from(code).ok()
}
