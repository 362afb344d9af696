//! Redis Sentinel: the `redis+sentinel://` URL, finding the primary the sentinels name, and
//! noticing at once when they switch to another.
//!
//! A failover is noticed two ways. The sentinels publish `+switch-master` the moment they
//! promote a replica: a task subscribed to it on one sentinel bumps an epoch that every call
//! checks (one atomic load), so the next call asks the sentinels again. And a call that the
//! old primary refuses (`READONLY` once it was demoted, `UNBLOCKED` for a blocked command, a
//! dropped connection) marks the route stale as well. Whichever comes first, the primary the
//! sentinels name is checked with `ROLE` before any call goes to it: a node that is not (or
//! no longer) a primary is never written to. From the announcement on, nothing more is sent on
//! the old primary's connections ([`super::fence`]) and waits on it let go
//! ([`Switches::moved_past`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use futures_core::Stream;

use redis::{RedisResult, Value};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::direct::{DirectConnection, Target};
use super::multi_host::{MultiHostUrl, NodeUrls, encode_component};
use bullmq_core::url_form;

/// The URL schemes of a sentinel deployment: plain and TLS.
const SCHEMES: [(&str, &str); 2] = [("redis+sentinel", "redis"), ("rediss+sentinel", "rediss")];

/// A parsed `redis+sentinel://[user:password@]host:port[,host:port…]/<master>[/db][?…]` URL.
/// The user and password are the data nodes'; `sentinel_username` and `sentinel_password`
/// in the query are the sentinels'.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SentinelUrl {
    /// The data nodes' URLs: their credentials, and the query without the sentinel parameters.
    nodes: NodeUrls,
    /// The sentinels' URLs: the same but for the sentinels' credentials.
    sentinel_urls: NodeUrls,
    /// The master's name, as the sentinels know it.
    pub(crate) master: String,
    /// The database on the data nodes.
    db: String,
    /// The sentinels.
    pub(crate) sentinels: Vec<(String, u16)>,
}

impl std::fmt::Debug for SentinelUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentinelUrl")
            .field("scheme", &self.nodes.scheme)
            .field("master", &self.master)
            .field("sentinels", &self.sentinels)
            .finish_non_exhaustive()
    }
}

impl SentinelUrl {
    /// The sentinel URL `url` is, `Ok(None)` for another kind, or why it is not valid (the
    /// message never quotes the URL).
    pub(crate) fn parse(url: &str) -> Result<Option<Self>, String> {
        let Some(url) = MultiHostUrl::split(url, &SCHEMES, 26379)? else {
            return Ok(None);
        };
        let (query, sentinels) = (url.query, url.hosts);
        let mut path = url.path.split('/').filter(|p| !p.is_empty());
        let master = path
            .next()
            .ok_or("the sentinel URL names no master (`redis+sentinel://host:port/<master>`)")?;
        let db = path.next().unwrap_or("0");
        if db.parse::<u32>().is_err() {
            return Err("the database after the master's name is not a number".into());
        }
        if sentinels.is_empty() {
            return Err("the sentinel URL names no sentinel".into());
        }
        // Keys and values are form-decoded, as redis-rs decodes a standalone URL's query.
        let (mut s_user, mut s_pass) = (None, None);
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            match url_form::decode(key).as_str() {
                "sentinel_username" => s_user = Some(url_form::decode(value)),
                "sentinel_password" => s_pass = Some(url_form::decode(value)),
                _ => kept.push(pair),
            }
        }
        let sentinel_user_info = match (s_user, s_pass) {
            (_, None) => String::new(),
            (user, Some(pass)) => format!(
                "{}:{}@",
                encode_component(user.as_deref().unwrap_or("")),
                encode_component(&pass)
            ),
        };
        let query = kept.join("&");
        Ok(Some(Self {
            nodes: NodeUrls::new(url.node_scheme, url.user_info, &query),
            sentinel_urls: NodeUrls::new(url.node_scheme, sentinel_user_info, &query),
            master: master.to_owned(),
            db: db.to_owned(),
            sentinels,
        }))
    }

    /// The URL of the data node at `host:port`, with the data nodes' credentials.
    pub(crate) fn node_url(&self, host: &str, port: u16) -> String {
        self.nodes.url(host, port, &self.db)
    }

    /// The URL of the sentinel at `host:port`, with the sentinels' credentials.
    pub(crate) fn sentinel_url(&self, host: &str, port: u16) -> String {
        self.sentinel_urls.url(host, port, "")
    }
}

/// The primary's address as the sentinel `client` reaches names it.
pub(crate) async fn ask_sentinel(
    client: &redis::Client,
    master: &str,
    timeout: Duration,
) -> RedisResult<(String, u16)> {
    let reply: Option<(String, u16)> = super::probe::ask(
        client,
        timeout,
        "asking a sentinel for the primary",
        |mut con| async move {
            redis::cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg(master)
                .query_async(&mut con)
                .await
        },
    )
    .await?;
    reply.ok_or_else(|| {
        redis::RedisError::from((
            redis::ErrorKind::Client,
            "the sentinel does not know the master",
            master.to_owned(),
        ))
    })
}

/// Whether the node `client` reaches says it is a primary (`ROLE`).
pub(crate) async fn is_primary(client: &redis::Client, timeout: Duration) -> RedisResult<bool> {
    let role: Value = super::probe::ask(
        client,
        timeout,
        "asking a node for its role",
        |mut con| async move { redis::cmd("ROLE").query_async(&mut con).await },
    )
    .await?;
    Ok(match role {
        Value::Array(parts) => matches!(
            parts.first(),
            Some(Value::BulkString(b)) if b.as_slice() == b"master"
        ),
        _ => false,
    })
}

/// The primary a `+switch-master` named, and how many switches were announced.
#[derive(Default)]
pub(crate) struct Switches {
    /// Bumped at each announcement (and whenever nobody listened for a while).
    pub(crate) epoch: AtomicU64,
    /// The new primary the last announcement named; `None` once a switch may have gone
    /// unheard (nobody listened for a while).
    pub(crate) announced: Mutex<Option<(String, u16)>>,
    /// When the last [`HEARD_KEPT`] bumps happened (wall clock, for tests that compare it
    /// with what a server logged).
    heard_at: Mutex<VecDeque<SystemTime>>,
    /// Wakes what waits on the old primary (blocking waits, event reads) at each bump.
    bumped: Notify,
}

/// How many bump times [`Switches`] keeps.
const HEARD_KEPT: usize = 16;

impl Switches {
    /// Moves the epoch on: every call from now on asks the sentinels again before it goes,
    /// nothing more is written on connections opened before, and waits in flight let go.
    pub(crate) fn bump(&self) {
        {
            let mut heard = self.heard_at.lock().unwrap_or_else(PoisonError::into_inner);
            if heard.len() == HEARD_KEPT {
                heard.pop_front();
            }
            heard.push_back(SystemTime::now());
        }
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.bumped.notify_waiters();
    }

    /// When the last bumps happened (at most [`HEARD_KEPT`]), oldest first.
    pub(crate) fn heard_at(&self) -> Vec<SystemTime> {
        let heard = self.heard_at.lock().unwrap_or_else(PoisonError::into_inner);
        heard.iter().copied().collect()
    }

    /// Whether the last switch heard named a primary other than `host:port`: a sentinel
    /// that names that one has not caught up yet.
    pub(crate) fn names_another(&self, host: &str, port: u16) -> bool {
        let announced = self
            .announced
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        announced
            .as_ref()
            .is_some_and(|(h, p)| h.as_str() != host || *p != port)
    }

    /// Returns once the epoch is no longer `seen`.
    pub(crate) async fn moved_past(&self, seen: u64) {
        loop {
            let bumped = self.bumped.notified();
            tokio::pin!(bumped);
            bumped.as_mut().enable();
            if self.epoch.load(Ordering::Acquire) != seen {
                return;
            }
            bumped.await;
        }
    }
}

/// Listens for `+switch-master` of `master` on the sentinels, in turn until one answers, and
/// notes each in `switches`; stopped by aborting the task. Over plain TCP on a direct
/// connection; over TLS, where the direct path cannot go, on redis-rs's pub/sub connection
/// (with the client's certificates).
pub(crate) fn watch_switches(
    sentinels: Vec<redis::Client>,
    master: String,
    switches: Arc<Switches>,
) -> AbortHandle {
    tokio::spawn(async move {
        loop {
            for client in &sentinels {
                // Returns when the sentinel goes away: then the next one is asked.
                let mut subscribed = false;
                let _ = match Target::for_client(client.get_connection_info()) {
                    Some(target) => listen(&target, &master, &switches, &mut subscribed).await,
                    None => listen_tls(client, &master, &switches, &mut subscribed).await,
                };
                // A switch may have happened while nobody listened. A sentinel that never
                // took the subscription (down, or refusing it) leaves the epoch alone: else
                // every call would ask the sentinels again, twice a second, for nothing.
                if subscribed {
                    // Nor is the last announcement known to be the last switch any more.
                    *switches
                        .announced
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = None;
                    switches.bump();
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
    .abort_handle()
}

/// Follows `+switch-master` on one sentinel until it goes away; `subscribed` tells whether it
/// ever took the subscription.
async fn listen(
    target: &Target,
    master: &str,
    switches: &Switches,
    subscribed: &mut bool,
) -> RedisResult<()> {
    let mut con = DirectConnection::open(target, Duration::from_secs(2)).await?;
    super::command::write(
        con.request_buffer(),
        [&b"SUBSCRIBE"[..], &b"+switch-master"[..]],
    );
    if let Some(reply) = con.exchange(1).await?.pop() {
        reply.extract_error()?;
    }
    *subscribed = true;
    loop {
        con.request_buffer();
        let mut replies = con.exchange(1).await?;
        // `message`, the channel, then the announcement.
        if let Some(Value::Array(parts)) = replies.pop()
            && let Some(Value::BulkString(payload)) = parts.get(2)
        {
            note_switch(payload, master, switches);
        }
    }
}

/// [`listen`] on redis-rs's pub/sub connection, which speaks TLS.
async fn listen_tls(
    client: &redis::Client,
    master: &str,
    switches: &Switches,
    subscribed: &mut bool,
) -> RedisResult<()> {
    let subscribing = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe("+switch-master").await?;
        RedisResult::Ok(pubsub)
    };
    let mut pubsub = tokio::time::timeout(Duration::from_secs(2), subscribing)
        .await
        .map_err(|_| super::direct::timed_out("subscribing to a sentinel"))??;
    *subscribed = true;
    // Borrowed, not `into_on_message`: the stream alone would drop the subscribing half, which
    // ends the connection's task and with it the stream at once.
    let mut messages = std::pin::pin!(pubsub.on_message());
    // Ends when the connection does.
    while let Some(message) = std::future::poll_fn(|cx| messages.as_mut().poll_next(cx)).await {
        note_switch(message.get_payload_bytes(), master, switches);
    }
    Ok(())
}

/// Notes the announcement `payload` (`<master> <old ip> <old port> <new ip> <new port>`) in
/// `switches` when it is about `master`.
fn note_switch(payload: &[u8], master: &str, switches: &Switches) {
    let text = String::from_utf8_lossy(payload);
    let words: Vec<&str> = text.split(' ').collect();
    if let [name, _, _, host, port] = words[..]
        && name == master
    {
        tracing::warn!(
            master,
            "redis sentinel: the primary was switched; calls go to the new one"
        );
        if let Ok(port) = port.parse() {
            *switches
                .announced
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some((host.to_owned(), port));
        }
        switches.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::SentinelUrl;

    #[test]
    fn sentinel_urls_split_data_node_and_sentinel_credentials() {
        let url = SentinelUrl::parse(
            "redis+sentinel://app:d4ta@10.0.0.1:26379,h2/mymaster/2?sentinel_password=s3nt&x=1",
        )
        .expect("valid")
        .expect("a sentinel URL");
        assert_eq!(url.master, "mymaster");
        assert_eq!(
            url.sentinels,
            vec![("10.0.0.1".to_owned(), 26379), ("h2".to_owned(), 26379)]
        );
        assert_eq!(
            url.node_url("10.0.0.9", 6380),
            "redis://app:d4ta@10.0.0.9:6380/2?x=1"
        );
        assert_eq!(url.sentinel_url("h2", 26379), "redis://:s3nt@h2:26379/?x=1");
        let shown = format!("{url:?}");
        assert!(
            !shown.contains("d4ta") && !shown.contains("s3nt"),
            "{shown}"
        );
        assert_eq!(SentinelUrl::parse("redis://h:1"), Ok(None));
        assert!(SentinelUrl::parse("redis+sentinel://h:1").is_err());
        assert!(SentinelUrl::parse("redis+sentinel://h:1/m/x").is_err());
    }
}
