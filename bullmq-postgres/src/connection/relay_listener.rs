//! The `LISTEN` connection of a relay node's inbox, held for the node's whole life.
//!
//! A connection of its own, on a pool of one outside the shared pool: a pooled one would be
//! held for good, and a few nodes on one backend would starve the pool the commands share.

use bullmq_core::Result;
use sqlx::postgres::{PgListener, PgPoolOptions};

use super::PostgresConnection;
use super::open::name_session;
use crate::error::wrap;

/// The channel publishes notify (`listen_relay.sql`).
pub(crate) const RELAY_CHANNEL: &str = "bullmq_relay";

impl PostgresConnection {
    /// Opens the relay's `LISTEN` connection and listens on [`RELAY_CHANNEL`]; once it is
    /// open, `name` gives the `application_name` discovery reads (none for a node-less
    /// handle).
    pub(crate) async fn open_relay_listener(
        &self,
        name: impl AsyncFnOnce() -> Result<Option<String>>,
    ) -> Result<PgListener> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(self.connect_timeout)
            .connect_lazy_with(self.connect.clone());
        let mut listener = PgListener::connect_with(&pool)
            .await
            .map_err(wrap("open the relay's LISTEN connection"))?;
        if let Some(name) = name().await? {
            name_session(&mut listener, &name)
                .await
                .map_err(wrap("name the relay's LISTEN connection"))?;
        }
        listener
            .listen(RELAY_CHANNEL)
            .await
            .map_err(wrap("listen on bullmq_relay"))?;
        Ok(listener)
    }
}
