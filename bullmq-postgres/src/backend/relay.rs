//! `RelayStore` for PostgreSQL: upstream's `relay_*` functions (migration `0004_relay`), as
//! its `PostgresRelayBackend` calls them. Rows have no expiry: sweeps remove expired nodes,
//! their subscriptions and inboxes, and expired retained messages, of every namespace. An
//! inbox is read after a `NOTIFY bullmq_relay '<namespace>:<node>'` on the handle's own
//! `LISTEN` connection (or after the wait ends: a missed notification only delays), and
//! acknowledged by entry ids (the cursor: the last batch's ids, comma-separated), which never
//! skips a row committed late.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bullmq_core::backend::{RelayStore, node_info_json};
use bullmq_core::relay::{
    RelayCounts, RelayError, RelayId, RelayInboxBatch, RelayInboxEntry, RelayNodeConnection,
    RelayNodeInfo, RelayNodeState, RelayPatternState, RelayPublishArgs, RelayPublished,
    RelayRetainedMessage, RelayRetainedState, RelaySubscribed, RelaySubscriptionFilter,
    RelaySubscriptionState,
};
use bullmq_core::{Error, Result};
use sha2::Digest as _;
use sqlx::Row as _;
use sqlx::postgres::{PgListener, PgRow};
use tokio::sync::{Mutex, Notify};

use super::{PostgresBackend, REFUSAL_SQLSTATE, one_row, one_value, sql_error};
use crate::connection::Query;
use crate::sql::{SqlCommand, commands};
use crate::wire::relay as wire;

/// `application_name`s are cut at 63 bytes by PostgreSQL.
const MAX_APPLICATION_NAME: usize = 63;
const APPLICATION_NAME_PREFIX: &str = "bullmq:relay:";

/// A handle's namespace and inbox connection, shared by its clones.
pub(crate) struct PgRelay {
    namespace: String,
    node: Option<String>,
    listener: Mutex<Option<PgListener>>,
    interrupted: AtomicBool,
    interrupt: Notify,
}

impl std::fmt::Debug for PgRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgRelay")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Upstream's relay refusal (`BM001`, the code in `DETAIL`) about `detail`, or the SQL
/// failure wrapped with the command's name.
fn refused<'a>(command: &'static str, detail: &'a str) -> impl FnOnce(sqlx::Error) -> Error + 'a {
    move |err| {
        let code = match &err {
            sqlx::Error::Database(db) if db.code().as_deref() == Some(REFUSAL_SQLSTATE) => db
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .and_then(|pg| pg.detail())
                .and_then(|d| d.trim().parse::<i64>().ok()),
            _ => None,
        };
        match code {
            Some(code) => Error::Relay(RelayError::new(code, detail)),
            None => sql_error(command)(err),
        }
    }
}

fn unsigned(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl PostgresBackend {
    fn relay(&self) -> Result<&PgRelay> {
        bullmq_core::relay::bound(self.relay.as_deref())
    }

    async fn relay_rows(
        &self,
        query: Query<'_>,
        command: &'static str,
        detail: &str,
    ) -> Result<Vec<PgRow>> {
        query
            .fetch_all(self.pool())
            .await
            .map_err(refused(command, detail))
    }

    /// Runs a command that answers a list, each row read by `read`: a row that does not read
    /// fails the whole answer, as `command`'s.
    async fn relay_list<T>(
        &self,
        query: Query<'_>,
        command: &'static str,
        detail: &str,
        read: impl Fn(&PgRow) -> std::result::Result<T, sqlx::Error>,
    ) -> Result<Vec<T>> {
        let rows = self.relay_rows(query, command, detail).await?;
        rows.iter()
            .map(read)
            .collect::<std::result::Result<_, _>>()
            .map_err(sql_error(command))
    }

    /// A page `start..=end` of one of the namespace's lists: `command`, upstream's `name`.
    async fn relay_page<T>(
        &self,
        command: SqlCommand,
        name: &'static str,
        start: i64,
        end: i64,
        read: impl Fn(&PgRow) -> std::result::Result<T, sqlx::Error>,
    ) -> Result<Vec<T>> {
        let ns = &self.relay()?.namespace;
        let query = wire::page(command, ns, start, end);
        self.relay_list(query, name, ns, read).await
    }

    async fn relay_one(
        &self,
        query: Query<'_>,
        command: &'static str,
        detail: &str,
    ) -> Result<PgRow> {
        one_row(self.relay_rows(query, command, detail).await?, command)
    }

    /// `column` of the one row a relay command answers.
    async fn relay_value<T>(
        &self,
        query: Query<'_>,
        command: &'static str,
        detail: &str,
        column: &str,
    ) -> Result<T>
    where
        T: for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        let rows = self.relay_rows(query, command, detail).await?;
        one_value(rows, column, command)
    }

    /// Upstream's `inboxConnectionName`: a digest of the database, schema, namespace and node.
    async fn inbox_name(&self, namespace: &str, node: &str) -> Result<(String, String)> {
        let row = sqlx::query("SELECT current_database() AS database, current_schema() AS schema")
            .fetch_one(self.pool())
            .await
            .map_err(sql_error("read the connection's database and schema"))?;
        let database: String = row
            .try_get("database")
            .map_err(sql_error("relay identity"))?;
        let schema: String = row.try_get("schema").map_err(sql_error("relay identity"))?;
        // Strings always serialize: the JSON text JSON.stringify writes for them.
        let identity =
            serde_json::to_string(&[&database, &schema, namespace, node]).unwrap_or_default();
        let digest: String = sha2::Sha256::digest(identity.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let name = format!(
            "{APPLICATION_NAME_PREFIX}{}",
            &digest[..MAX_APPLICATION_NAME - APPLICATION_NAME_PREFIX.len()]
        );
        Ok((name, database))
    }

    async fn read_rows(&self, node: &RelayId, ack: &[i64], count: u32) -> Result<Vec<PgRow>> {
        let ns = &self.relay()?.namespace;
        self.relay_rows(
            wire::read_inbox(ns, node, ack, count),
            "relay_read_inbox",
            node.as_str(),
        )
        .await
    }

    /// The `LISTEN` connection, opened (and named after the node) on first use.
    async fn listening<'a>(
        &self,
        relay: &'a PgRelay,
    ) -> Result<tokio::sync::MutexGuard<'a, Option<PgListener>>> {
        let mut slot = relay.listener.lock().await;
        if slot.is_none() {
            let listener = self
                .connection()
                .open_relay_listener(async || match &relay.node {
                    Some(node) => Ok(Some(self.inbox_name(&relay.namespace, node).await?.0)),
                    None => Ok(None),
                })
                .await?;
            *slot = Some(listener);
        }
        Ok(slot)
    }
}

fn entry(row: &PgRow) -> std::result::Result<(i64, RelayInboxEntry), sqlx::Error> {
    Ok((
        row.try_get("id")?,
        RelayInboxEntry {
            kind: row.try_get("kind")?,
            topic: row.try_get("topic")?,
            mid: row.try_get::<i64, _>("mid")?.to_string(),
            ts: unsigned(row.try_get("ts")?),
            data: row.try_get("data")?,
            endpoints: row.try_get("endpoints")?,
        },
    ))
}

/// A row of `relay_get_nodes`.
fn node_row(row: &PgRow) -> std::result::Result<RelayNodeState, sqlx::Error> {
    let info: Option<serde_json::Value> = row.try_get("info")?;
    Ok(RelayNodeState {
        id: row.try_get("node_id")?,
        info: info
            .and_then(|i| serde_json::from_value(i).ok())
            .unwrap_or_default(),
        registered_at: unsigned(row.try_get("registered_at")?),
        lease_until: unsigned(row.try_get("lease_until")?),
        last_heartbeat: row
            .try_get::<Option<i64>, _>("last_heartbeat")?
            .map(unsigned),
        backlog: unsigned(row.try_get::<i32, _>("backlog")?.into()),
        dropped: unsigned(row.try_get("dropped")?),
        subscriptions: unsigned(row.try_get::<i32, _>("subscriptions")?.into()),
    })
}

/// A row of `relay_get_subscriptions`.
fn subscription_row(row: &PgRow) -> std::result::Result<RelaySubscriptionState, sqlx::Error> {
    Ok(RelaySubscriptionState {
        node_id: row.try_get("node_id")?,
        endpoint_id: row.try_get("endpoint_id")?,
        pattern: row.try_get("pattern")?,
    })
}

/// A row of `relay_get_patterns`.
fn pattern_row(row: &PgRow) -> std::result::Result<RelayPatternState, sqlx::Error> {
    Ok(RelayPatternState {
        pattern: row.try_get("pattern")?,
        subscriptions: unsigned(row.try_get::<i32, _>("subscriptions")?.into()),
    })
}

/// A row of `relay_get_retained`.
fn retained_row(row: &PgRow) -> std::result::Result<RelayRetainedState, sqlx::Error> {
    Ok(RelayRetainedState {
        topic: row.try_get("topic")?,
        expires_at: unsigned(row.try_get("expires_at")?),
        mid: row.try_get::<i64, _>("mid")?.to_string(),
        ts: unsigned(row.try_get("ts")?),
        data: row.try_get("data")?,
    })
}

/// A row of `relay_get_node_connections`.
fn connection_row(row: &PgRow) -> std::result::Result<RelayNodeConnection, sqlx::Error> {
    Ok(RelayNodeConnection {
        address: row.try_get("address")?,
        age: unsigned(row.try_get::<i32, _>("age")?.into()),
        idle: unsigned(row.try_get::<i32, _>("idle")?.into()),
    })
}

impl RelayStore for PostgresBackend {
    fn relay_handle(&self, namespace: &RelayId, node: Option<&RelayId>) -> Self {
        let relay = PgRelay {
            namespace: namespace.as_str().to_owned(),
            node: node.map(|n| n.as_str().to_owned()),
            listener: Mutex::new(None),
            interrupted: AtomicBool::new(false),
            interrupt: Notify::new(),
        };
        Self {
            relay: Some(Arc::new(relay)),
            ..self.clone()
        }
    }

    fn relay_initial_cursor(&self) -> &'static str {
        ""
    }

    async fn relay_register_node(
        &self,
        node: &RelayId,
        lease: Duration,
        info: &RelayNodeInfo,
        _inbox_max_length: u64,
    ) -> Result<()> {
        let ns = &self.relay()?.namespace;
        let info = node_info_json(info)?;
        wire::register_node(ns, node, lease, info)
            .execute(self.pool())
            .await
            .map_err(refused("relay_register_node", node.as_str()))?;
        Ok(())
    }

    async fn relay_heartbeat(&self, node: &RelayId, lease: Duration) -> Result<bool> {
        let ns = &self.relay()?.namespace;
        let query = wire::heartbeat(ns, node, lease);
        self.relay_value(query, "relay_heartbeat", node.as_str(), "alive")
            .await
    }

    async fn relay_unregister_node(&self, node: &RelayId) -> Result<bool> {
        let ns = &self.relay()?.namespace;
        let query = wire::of_node(commands::RELAY_UNREGISTER_NODE, ns, node);
        self.relay_value(query, "relay_unregister_node", node.as_str(), "removed")
            .await
    }

    async fn relay_sweep(&self, limit: u32) -> Result<Vec<String>> {
        let ns = &self.relay()?.namespace;
        self.relay_list(wire::sweep(ns, limit), "relay_sweep", ns, |r| {
            r.try_get("node_id")
        })
        .await
    }

    async fn relay_subscribe(
        &self,
        node: &RelayId,
        endpoint: &RelayId,
        pattern: &str,
    ) -> Result<RelaySubscribed> {
        let ns = &self.relay()?.namespace;
        let row = self
            .relay_one(
                wire::of_node(commands::RELAY_SUBSCRIBE, ns, node)
                    .bind(endpoint.as_str())
                    .bind(pattern),
                "relay_subscribe",
                pattern,
            )
            .await?;
        let get = || -> std::result::Result<RelaySubscribed, sqlx::Error> {
            let mid: Option<i64> = row.try_get("retained_mid")?;
            let retained = match mid {
                Some(mid) => Some(RelayRetainedMessage {
                    mid: mid.to_string(),
                    ts: unsigned(row.try_get::<Option<i64>, _>("retained_ts")?.unwrap_or(0)),
                    data: row
                        .try_get::<Option<String>, _>("retained_data")?
                        .unwrap_or_default(),
                }),
                None => None,
            };
            Ok(RelaySubscribed {
                added: row.try_get("added")?,
                retained,
            })
        };
        get().map_err(sql_error("relay_subscribe"))
    }

    async fn relay_remove_endpoint(&self, node: &RelayId, endpoint: &RelayId) -> Result<u64> {
        let ns = &self.relay()?.namespace;
        let query =
            wire::of_node(commands::RELAY_REMOVE_ENDPOINT, ns, node).bind(endpoint.as_str());
        let removed: i32 = self
            .relay_value(query, "relay_remove_endpoint", endpoint.as_str(), "removed")
            .await?;
        Ok(u64::try_from(removed).unwrap_or(0))
    }

    async fn relay_publish(
        &self,
        topic: &str,
        data: &str,
        args: RelayPublishArgs,
    ) -> Result<RelayPublished> {
        let ns = &self.relay()?.namespace;
        let row = self
            .relay_one(wire::publish(ns, topic, data, args), "relay_publish", topic)
            .await?;
        let get = || -> std::result::Result<RelayPublished, sqlx::Error> {
            Ok(RelayPublished {
                mid: row.try_get::<i64, _>("message_id")?.to_string(),
                nodes: unsigned(row.try_get::<i32, _>("node_count")?.into()),
                endpoints: unsigned(row.try_get::<i32, _>("endpoint_count")?.into()),
            })
        };
        get().map_err(sql_error("relay_publish"))
    }

    async fn relay_delete_retained(&self, topic: &str) -> Result<bool> {
        let ns = &self.relay()?.namespace;
        let query = crate::wire::queued(commands::RELAY_DELETE_RETAINED, ns).bind(topic);
        self.relay_value(query, "relay_delete_retained", topic, "deleted")
            .await
    }

    async fn relay_read_inbox(
        &self,
        node: &RelayId,
        cursor: &str,
        block: Duration,
        count: u32,
    ) -> Result<RelayInboxBatch> {
        let relay = self.relay()?;
        if relay.interrupted.load(Ordering::SeqCst) {
            return Ok(RelayInboxBatch {
                entries: Vec::new(),
                cursor: cursor.to_owned(),
            });
        }
        // Listening before reading, so a row committed right after the read wakes the wait.
        let mut listener = self.listening(relay).await?;
        let mut rows = self.read_rows(node, &wire::acks(cursor), count).await?;
        // Armed before the flag is read, so an interrupt landing between the two still wakes
        // the wait below.
        let interrupted = relay.interrupt.notified();
        tokio::pin!(interrupted);
        interrupted.as_mut().enable();
        if rows.is_empty() && !block.is_zero() && !relay.interrupted.load(Ordering::SeqCst) {
            let payload = format!("{}:{}", relay.namespace, node.as_str());
            let deadline = tokio::time::Instant::now() + block;
            if let Some(l) = listener.as_mut() {
                loop {
                    tokio::select! {
                        () = &mut interrupted => break,
                        () = tokio::time::sleep_until(deadline) => break,
                        heard = l.try_recv() => match heard {
                            Ok(Some(n)) if n.payload() == payload => break,
                            Ok(Some(_)) => {}
                            // A lost LISTEN connection: the next read opens a new one, named
                            // again (`recv` would reconnect unnamed).
                            Ok(None) | Err(_) => {
                                *listener = None;
                                break;
                            }
                        },
                    }
                }
            }
            if !relay.interrupted.load(Ordering::SeqCst) {
                rows = self.read_rows(node, &[], count).await?;
            }
        }
        drop(listener);
        let mut ids = Vec::with_capacity(rows.len());
        let mut entries = Vec::with_capacity(rows.len());
        for row in &rows {
            let (id, e) = entry(row).map_err(sql_error("relay_read_inbox"))?;
            ids.push(id.to_string());
            entries.push(e);
        }
        Ok(RelayInboxBatch {
            entries,
            cursor: ids.join(","),
        })
    }

    async fn relay_interrupt_inbox(&self) {
        if let Some(relay) = self.relay.as_deref() {
            relay.interrupted.store(true, Ordering::SeqCst);
            relay.interrupt.notify_waiters();
        }
    }

    async fn relay_trim_inbox(&self, node: &RelayId, cursor: &str, max_length: u64) -> Result<u64> {
        let ns = &self.relay()?.namespace;
        let query = wire::trim_inbox(ns, node, cursor, max_length);
        let backlog: i32 = self
            .relay_value(query, "relay_trim_inbox", node.as_str(), "backlog")
            .await?;
        Ok(unsigned(backlog.into()))
    }

    async fn relay_counts(&self) -> Result<RelayCounts> {
        let ns = &self.relay()?.namespace;
        let row = self
            .relay_one(
                crate::wire::queued(commands::RELAY_GET_COUNTS, ns),
                "relay_get_counts",
                ns,
            )
            .await?;
        let get = |c: &str| row.try_get::<i32, _>(c).map(|n| unsigned(n.into()));
        let counts = || -> std::result::Result<RelayCounts, sqlx::Error> {
            Ok(RelayCounts {
                nodes: get("nodes")?,
                subscriptions: get("subscriptions")?,
                patterns: get("patterns")?,
                retained: get("retained")?,
            })
        };
        counts().map_err(sql_error("relay_get_counts"))
    }

    async fn relay_nodes(&self, start: i64, end: i64) -> Result<Vec<RelayNodeState>> {
        let command = commands::RELAY_GET_NODES;
        self.relay_page(command, "relay_get_nodes", start, end, node_row)
            .await
    }

    async fn relay_subscriptions(
        &self,
        filter: Option<&RelaySubscriptionFilter>,
        start: i64,
        end: i64,
    ) -> Result<Vec<RelaySubscriptionState>> {
        let ns = &self.relay()?.namespace;
        let query = wire::get_subscriptions(ns, filter, start, end);
        self.relay_list(query, "relay_get_subscriptions", ns, subscription_row)
            .await
    }

    async fn relay_patterns(&self, start: i64, end: i64) -> Result<Vec<RelayPatternState>> {
        let command = commands::RELAY_GET_PATTERNS;
        self.relay_page(command, "relay_get_patterns", start, end, pattern_row)
            .await
    }

    async fn relay_retained(&self, start: i64, end: i64) -> Result<Vec<RelayRetainedState>> {
        let command = commands::RELAY_GET_RETAINED;
        self.relay_page(command, "relay_get_retained", start, end, retained_row)
            .await
    }

    async fn relay_namespaces(&self) -> Result<Vec<String>> {
        let query = crate::wire::unbound(commands::RELAY_GET_NAMESPACES);
        self.relay_list(query, "relay_get_namespaces", "", |r| r.try_get("ns"))
            .await
    }

    async fn relay_node_connections(&self, node: &RelayId) -> Result<Vec<RelayNodeConnection>> {
        let ns = &self.relay()?.namespace;
        let (name, database) = self.inbox_name(ns, node.as_str()).await?;
        let query = wire::get_node_connections(&name, &database);
        self.relay_list(
            query,
            "relay_get_node_connections",
            node.as_str(),
            connection_row,
        )
        .await
    }

    async fn relay_close(&self) -> Result<()> {
        self.relay_interrupt_inbox().await;
        if let Some(relay) = self.relay.as_deref() {
            let listener = relay.listener.lock().await.take();
            drop(listener);
        }
        Ok(())
    }
}
