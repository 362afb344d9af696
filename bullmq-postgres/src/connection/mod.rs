//! Every connection this store opens: the pool, the lanes commands run on, and the dedicated
//! connections beside them (`LISTEN`).
//!
//! As upstream's `PostgresConnection`: pooled connections pin the schema's `search_path` at
//! startup and carry no `application_name` (discovery must not count them as workers);
//! long-lived dedicated connections (`LISTEN`) are opened apart from the pool, so a pool of
//! one connection cannot starve them, and carry the name discovery reads.
//!
//! - [`PostgresConnection`] (this file): the pool, the lanes and the settings they share.
//! - `open`: one connection opened outside any pool, and where it points ([`open::target`]).
//! - `lanes`: the connections commands run on, one statement (or transaction) per checkout.
//! - `link`: which statement outcomes show a connection lost or working.
//! - `listener`: the `LISTEN` connection of one backend and the signals it publishes.
//! - `relay_listener`: the `LISTEN` connection of a relay node's inbox.
//! - `client_name`: the `application_name` of dedicated connections, as discovery reads it.
//! - `connect_failure`: why a connection could not be opened ([`ConnectFailure`]).

pub(crate) mod client_name;
pub(crate) mod connect_failure;
mod lanes;
mod link;
pub(crate) mod listener;
pub(crate) mod open;
mod relay_listener;

use std::sync::Arc;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection as _, PgConnection, Postgres};

pub use connect_failure::{ConnectFailure, TlsFailure};
pub(crate) use lanes::{Lanes, OnLane, Query};

use self::open::{name_session, open, open_first, target};
use crate::error::wrap;
use crate::migrator;
use crate::options::PostgresOptions;
use crate::schema_name::SchemaName;
use bullmq_core::Result;

/// A pool of connections to one schema, checked (or migrated) when it was made.
///
/// Cloning is cheap and shares the pool.
#[derive(Clone)]
pub struct PostgresConnection {
    pool: PgPool,
    /// The connections commands run on (see [`lanes`]); `pool` serves the rest.
    lanes: Arc<Lanes>,
    connect: PgConnectOptions,
    connect_timeout: Duration,
    schema: SchemaName,
    skip_version_check: bool,
    waiting: Waiting,
}

/// How the backends on a connection wait for work and events ([`PostgresOptions::listen`],
/// [`poll_interval`](PostgresOptions::poll_interval),
/// [`event_hold_max`](PostgresOptions::event_hold_max)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Waiting {
    pub(crate) listen: bool,
    pub(crate) poll_interval: Duration,
    pub(crate) event_hold_max: Duration,
}

impl std::fmt::Debug for PostgresConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `PgConnectOptions` would print the password.
        f.debug_struct("PostgresConnection")
            .field("target", &target(&self.connect))
            .field("schema", &self.schema)
            .field("pool_size", &self.pool.size())
            .finish_non_exhaustive()
    }
}

impl PostgresConnection {
    /// Connects, then migrates the schema when [`PostgresOptions::migrate`] is set, or checks
    /// that it is ready otherwise (the ledger's version and the client versions it allows).
    ///
    /// The first connection is opened directly rather than through the pool, so that an
    /// unreachable server fails at once with
    /// [`PostgresError::Unreachable`](crate::PostgresError::Unreachable) and the reason,
    /// instead of the pool's retries ending in a bare timeout.
    pub async fn connect(options: &PostgresOptions) -> Result<Self> {
        options.check()?;
        let connect = options.connect_options()?;
        let mut first = open_first(options, &connect).await?;
        let ready = if options.migrate {
            migrator::run_migrations(&mut first, &options.schema, options.skip_version_check).await
        } else {
            migrator::check_schema(&mut first, &options.schema, options.skip_version_check).await
        };
        let _ = first.close().await;
        ready?;
        // Node.js's pool does not test a connection before handing it out either: a dead one
        // fails its statement and is replaced.
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.connect_timeout)
            .test_before_acquire(false)
            .connect_lazy_with(connect.clone());
        let lanes = Arc::new(Lanes::new(
            connect.clone(),
            options.max_connections,
            options.connect_timeout,
        ));
        Ok(Self {
            pool,
            lanes,
            connect,
            connect_timeout: options.connect_timeout,
            schema: options.schema.clone(),
            skip_version_check: options.skip_version_check,
            waiting: Waiting {
                listen: options.listen,
                poll_interval: options.poll_interval,
                event_hold_max: options.event_hold_max,
            },
        })
    }

    /// The pool; its connections' `search_path` is the schema.
    #[must_use]
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The connections the backends' commands run on.
    pub(crate) fn lanes(&self) -> &Lanes {
        &self.lanes
    }

    /// The schema.
    #[must_use]
    pub fn schema(&self) -> &SchemaName {
        &self.schema
    }

    /// How backends on this connection wait.
    pub(crate) fn waiting(&self) -> Waiting {
        self.waiting
    }

    /// Applies pending migrations on one pooled connection, as [`crate::migrate`] does;
    /// returns the schema's version afterwards.
    pub async fn migrate(&self) -> Result<i32> {
        let mut conn = self.pooled("get a connection to migrate on").await?;
        migrator::run_migrations(&mut conn, &self.schema, self.skip_version_check).await
    }

    /// The schema's version, after the same check as [`connect`](Self::connect) makes.
    pub async fn schema_version(&self) -> Result<i32> {
        let mut conn = self
            .pooled("get a connection to read the schema version")
            .await?;
        migrator::check_schema(&mut conn, &self.schema, self.skip_version_check).await
    }

    /// One connection from the pool; `context` says what for when none is had.
    async fn pooled(&self, context: &'static str) -> Result<PoolConnection<Postgres>> {
        self.pool.acquire().await.map_err(wrap(context))
    }

    /// Opens a connection outside the pool, with the same settings (the schema's
    /// `search_path`), named `application_name` when given: what a worker's or `QueueEvents`'
    /// `LISTEN` connection is (named as Node.js names it, so discovery finds it).
    ///
    /// The name is set after connecting with `set_config`, as upstream does, so that it can be
    /// applied again to a replacement connection the same way.
    pub async fn open_dedicated(&self, application_name: Option<&str>) -> Result<PgConnection> {
        let mut conn = open(&self.connect, self.connect_timeout).await?;
        if let Some(name) = application_name {
            name_session(&mut conn, name)
                .await
                .map_err(wrap("name the dedicated connection"))?;
        }
        Ok(conn)
    }

    /// Closes the pool: waits for connections in use to come back, then closes them all.
    pub async fn close(&self) {
        self.lanes.close().await;
        self.pool.close().await;
    }
}
