//! The relay's read-only views for dashboards: `relayGet`, `relayGetNamespaces`, and the
//! inbox connections from `CLIENT LIST`.

use bullmq_core::Result;
use bullmq_core::relay::{
    RelayCounts, RelayNodeConnection, RelayNodeInfo, RelayNodeState, RelayPatternState,
    RelayRetainedState, RelaySubscriptionFilter, RelaySubscriptionState,
};
use redis::Value;

use super::{RedisBackend, namespace_key};
use crate::error::wrap;
use crate::reply;
use crate::script::ScriptCall;
use crate::scripts;

/// A row's field `i` as text (empty when missing).
fn field(row: &[Value], i: usize) -> String {
    row.get(i).and_then(reply::text).unwrap_or_default()
}

fn number(row: &[Value], i: usize) -> u64 {
    field(row, i).parse::<f64>().map_or(0, |n| {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = n.max(0.0) as u64;
        n
    })
}

/// The `filter` argument of `relayGet` for views that take none.
pub(super) const NO_FILTER: (&str, &str) = ("", "");

/// The `filter` argument of the `subscriptions` view.
pub(super) fn subscription_filter(filter: Option<&RelaySubscriptionFilter>) -> (&str, &str) {
    match filter {
        Some(RelaySubscriptionFilter::Node(id)) => ("node", id.as_str()),
        Some(RelaySubscriptionFilter::Pattern(p)) => ("pattern", p.as_str()),
        None => NO_FILTER,
    }
}

/// A row of the `nodes` view.
pub(super) fn node_row(row: &[Value]) -> RelayNodeState {
    let info = field(row, 3);
    let hb = field(row, 4);
    RelayNodeState {
        id: field(row, 0),
        // Another runtime's info that is not ours to read shows as none.
        info: serde_json::from_str::<RelayNodeInfo>(&info).unwrap_or_default(),
        registered_at: number(row, 1),
        lease_until: number(row, 2),
        last_heartbeat: (!hb.is_empty()).then(|| number(row, 4)),
        backlog: number(row, 5),
        dropped: number(row, 6),
        subscriptions: number(row, 7),
    }
}

/// A row of the `subscriptions` view.
pub(super) fn subscription_row(row: &[Value]) -> RelaySubscriptionState {
    RelaySubscriptionState {
        node_id: field(row, 0),
        endpoint_id: field(row, 1),
        pattern: field(row, 2),
    }
}

/// A row of the `patterns` view.
pub(super) fn pattern_row(row: &[Value]) -> RelayPatternState {
    RelayPatternState {
        pattern: field(row, 0),
        subscriptions: number(row, 1),
    }
}

/// A row of the `retained` view.
pub(super) fn retained_row(row: &[Value]) -> RelayRetainedState {
    RelayRetainedState {
        topic: field(row, 0),
        expires_at: number(row, 1),
        mid: field(row, 2),
        ts: number(row, 3),
        data: field(row, 4),
    }
}

impl RedisBackend {
    /// One `relayGet` view, as rows.
    async fn relay_get(
        &self,
        view: &str,
        start: i64,
        end: i64,
        filter: (&str, &str),
    ) -> Result<Value> {
        self.relay_run(&scripts::RELAY_GET, "read a relay view", |c| {
            c.arg(view).arg(start).arg(end).arg(filter.0).arg(filter.1)
        })
        .await
    }

    /// One `relayGet` view of rows, each read by `row` from its fields (one of this file's
    /// `*_row` readers).
    pub(super) async fn relay_get_rows<T>(
        &self,
        view: &str,
        start: i64,
        end: i64,
        filter: (&str, &str),
        row: impl Fn(&[Value]) -> T,
    ) -> Result<Vec<T>> {
        let v = self.relay_get(view, start, end, filter).await?;
        Ok(reply::items(&v)
            .iter()
            .map(|r| row(reply::items(r)))
            .collect())
    }

    pub(super) async fn relay_get_counts(&self) -> Result<RelayCounts> {
        let v = self.relay_get("counts", 0, -1, NO_FILTER).await?;
        let n = reply::counts(&v);
        let at = |i: usize| n.get(i).copied().unwrap_or(0);
        Ok(RelayCounts {
            nodes: at(0),
            subscriptions: at(1),
            patterns: at(2),
            retained: at(3),
        })
    }

    /// The registry's candidates, each checked against its own keys (the registry only says
    /// until when a namespace may be in use).
    pub(super) async fn relay_get_namespaces(&self) -> Result<Vec<String>> {
        let keys = self.relay_keys()?;
        let registry = self.registry_connection(keys);
        let candidates = ScriptCall::default()
            .key(&keys.registry)
            .invoke(&registry, &scripts::RELAY_GET_NAMESPACES)
            .await
            .map_err(wrap("list relay namespaces"))?;
        let mut used = Vec::new();
        for namespace in reply::text_items(&candidates) {
            let base = namespace_key(self.prefix.as_str(), &namespace);
            let con = self.con.for_slot(crate::connection::slot(base.as_bytes()));
            let v = ScriptCall::default()
                .key(format!("{base}:nodes"))
                .arg(&base)
                .arg("used")
                .arg(0)
                .arg(-1)
                .arg("")
                .arg("")
                .invoke(&con, &scripts::RELAY_GET)
                .await
                .map_err(wrap("check a relay namespace"))?;
            if reply::int(&v) == Some(1) {
                used.push(namespace);
            }
        }
        Ok(used)
    }

    /// The clients named `name` in the database this backend uses, from `CLIENT LIST` of
    /// every primary (as upstream asks every node of a cluster: a slot's inbox connections
    /// follow it when it moves).
    pub(super) async fn relay_get_node_connections(
        &self,
        name: &str,
    ) -> Result<Vec<RelayNodeConnection>> {
        let mut con = self.connection();
        let info: String = redis::cmd("CLIENT")
            .arg("INFO")
            .query_async(&mut con)
            .await
            .map_err(wrap("read this connection's client info"))?;
        let db = client_field(&info, "db").unwrap_or("0").to_owned();
        // Through this connection when its server is the only primary.
        let lists = if con.is_cluster() {
            let primaries = con
                .primary_clients()
                .await
                .map_err(wrap("list the cluster's primaries"))?;
            let config = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(self.response_timeout))
                .set_response_timeout(Some(self.response_timeout));
            let mut lists = Vec::with_capacity(primaries.len());
            for client in primaries {
                let mut node = client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
                    .map_err(wrap("connect to a primary"))?;
                lists.push(client_list(&mut node).await?);
            }
            lists
        } else {
            vec![client_list(&mut con).await?]
        };
        Ok(lists
            .iter()
            .flat_map(|list| list.lines())
            .filter(|line| {
                client_field(line, "name") == Some(name) && client_field(line, "db") == Some(&db)
            })
            .map(|line| RelayNodeConnection {
                address: client_field(line, "addr").unwrap_or_default().to_owned(),
                age: client_field(line, "age")
                    .and_then(|a| a.parse().ok())
                    .unwrap_or(0),
                idle: client_field(line, "idle")
                    .and_then(|a| a.parse().ok())
                    .unwrap_or(0),
            })
            .collect())
    }
}

/// `CLIENT LIST` of the server `con` reaches.
async fn client_list(con: &mut impl redis::aio::ConnectionLike) -> Result<String> {
    redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(con)
        .await
        .map_err(wrap("list the server's clients"))
}

/// A `key=value` field of a `CLIENT LIST` / `CLIENT INFO` line.
fn client_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split(' ')
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
}
