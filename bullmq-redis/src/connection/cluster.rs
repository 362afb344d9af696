//! Redis Cluster addressing: the cluster URL, key slots and hash tags, and the topology
//! (`CLUSTER SLOTS`) that says which primary owns a slot.
//!
//! Every key of a queue is kept in one slot by a hash tag, so a queue's backend talks to one
//! primary at a time (see [`route`](super::route)); this module only answers "which one".

use std::time::Duration;

use redis::{RedisResult, Value};

use super::multi_host::{MultiHostUrl, NodeUrls};

/// The URL schemes of a cluster: plain and TLS.
const SCHEMES: [(&str, &str); 2] = [("redis+cluster", "redis"), ("rediss+cluster", "rediss")];

/// Number of slots of a Redis Cluster.
const SLOTS: u16 = 16_384;

/// A parsed `redis+cluster://[user:password@]host:port[,host:port…][/][?query]` URL: the
/// seed nodes, and how to write the URL of any node with the same credentials and settings.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ClusterUrl {
    /// The scheme, credentials and query of every node's URL.
    nodes: NodeUrls,
    /// The nodes to ask for the topology first.
    pub(crate) seeds: Vec<(String, u16)>,
}

impl std::fmt::Debug for ClusterUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterUrl")
            .field("scheme", &self.nodes.scheme)
            .field("seeds", &self.seeds)
            .finish_non_exhaustive()
    }
}

impl ClusterUrl {
    /// The cluster URL `url` is, `Ok(None)` when it is a standalone URL, or why it is not
    /// valid (the message never quotes the URL).
    pub(crate) fn parse(url: &str) -> Result<Option<Self>, String> {
        let Some(url) = MultiHostUrl::split(url, &SCHEMES, 6379)? else {
            return Ok(None);
        };
        if !matches!(url.path, "" | "0") {
            return Err("a cluster has only database 0, the URL's path asks for another".into());
        }
        if url.hosts.is_empty() {
            return Err("the cluster URL names no node (`redis+cluster://host:port,…`)".into());
        }
        Ok(Some(Self {
            nodes: NodeUrls::new(url.node_scheme, url.user_info, url.query),
            seeds: url.hosts,
        }))
    }

    /// The standalone URL of the node at `host:port`, with the cluster URL's credentials.
    pub(crate) fn node_url(&self, host: &str, port: u16) -> String {
        self.nodes.url(host, port, "")
    }
}

/// The part of `key` that decides its slot: the text between the first `{` and the next `}`
/// after it when that is not empty, as Redis Cluster defines it; `None` when there is none.
pub(crate) fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let len = key[open + 1..].iter().position(|&b| b == b'}')?;
    (len > 0).then(|| &key[open + 1..open + 1 + len])
}

/// The slot of `key`: CRC16 (XMODEM) of its hash tag, or of the whole key, modulo 16384.
pub(crate) fn slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key).unwrap_or(key)) % SLOTS
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 == 0 {
                crc << 1
            } else {
                (crc << 1) ^ 0x1021
            };
        }
    }
    crc
}

/// What `CLUSTER SLOTS` says: for `slot`, its primary, and every node it names (to ask next
/// time).
pub(crate) struct Topology {
    /// The primary serving the slot, if any range holds it.
    pub(crate) owner: Option<(String, u16)>,
    /// Every node of the reply, primaries and replicas.
    pub(crate) nodes: Vec<(String, u16)>,
    /// The primary of each slot range, once each.
    pub(crate) primaries: Vec<(String, u16)>,
}

/// Reads the topology from the node `client` reaches, within `timeout`; `asked` is that
/// node's host, used where the reply leaves a node's host out.
pub(crate) async fn read_topology(
    client: &redis::Client,
    asked: &str,
    slot: u16,
    timeout: Duration,
) -> RedisResult<Topology> {
    let reply = super::probe::ask(
        client,
        timeout,
        "reading the cluster's topology",
        |mut con| async move {
            redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query_async::<Value>(&mut con)
                .await
        },
    )
    .await?;
    Ok(parse_slots(&reply, asked, slot))
}

/// Takes a `CLUSTER SLOTS` reply apart: `[[start, end, [host, port, id…], replica…], …]`.
fn parse_slots(reply: &Value, asked: &str, slot: u16) -> Topology {
    let mut topology = Topology {
        owner: None,
        nodes: Vec::new(),
        primaries: Vec::new(),
    };
    let Value::Array(ranges) = reply else {
        return topology;
    };
    for range in ranges {
        let Value::Array(parts) = range else { continue };
        let (Some(start), Some(end)) = (parts.first().and_then(int), parts.get(1).and_then(int))
        else {
            continue;
        };
        let nodes: Vec<(String, u16)> = parts[2..]
            .iter()
            .filter_map(|node| node_address(node, asked))
            .collect();
        if (start..=end).contains(&i64::from(slot)) {
            topology.owner = nodes.first().cloned();
        }
        if let Some(primary) = nodes.first()
            && !topology.primaries.contains(primary)
        {
            topology.primaries.push(primary.clone());
        }
        for node in nodes {
            if !topology.nodes.contains(&node) {
                topology.nodes.push(node);
            }
        }
    }
    topology
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        _ => None,
    }
}

/// `[host, port, …]`; an empty or `?` host is the node that was asked.
fn node_address(node: &Value, asked: &str) -> Option<(String, u16)> {
    let Value::Array(parts) = node else {
        return None;
    };
    let host = match parts.first()? {
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(s) => s.clone(),
        _ => return None,
    };
    let host = if host.is_empty() || host == "?" {
        asked.to_owned()
    } else {
        host
    };
    let port = u16::try_from(int(parts.get(1)?)?).ok()?;
    Some((host, port))
}

/// Where a cluster sends a call that reached the wrong node, or why it cannot take it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `MOVED <slot> <host>:<port>`: the slot lives there now.
    Moved(String, u16),
    /// `ASK <slot> <host>:<port>`: this key is being migrated there; ask it once.
    Ask(String, u16),
    /// `TRYAGAIN`, `CLUSTERDOWN`, `READONLY` from a demoted primary, or `NOREPLICAS` from a
    /// primary whose replica left (`min-replicas-to-write`; it left because it was promoted,
    /// or the new primary has no replica yet): ask again where the primary is, and retry
    /// shortly.
    Retry,
}

impl Redirect {
    /// The redirect an error reply with `code` and `detail` is, if it is one; a redirect
    /// without a host (`MOVED 12 :6380`) is to `current_host`.
    pub(crate) fn of(code: &str, detail: &str, current_host: &str) -> Option<Self> {
        match code {
            // Nothing ran: the cluster is busy, (`READONLY`) the node was demoted, or
            // (`NOREPLICAS`) it refuses writes until a replica follows it.
            "TRYAGAIN" | "CLUSTERDOWN" | "READONLY" | "NOREPLICAS" => Some(Self::Retry),
            "MOVED" | "ASK" => {
                let address = detail.split_whitespace().nth(1)?;
                let (host, port) = address.rsplit_once(':')?;
                let host = if host.is_empty() { current_host } else { host };
                let port = port.parse().ok()?;
                Some(if code == "MOVED" {
                    Self::Moved(host.to_owned(), port)
                } else {
                    Self::Ask(host.to_owned(), port)
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ClusterUrl, Redirect, hash_tag, slot};

    #[test]
    fn slots_are_redis_clusters() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(slot(b"123456789"), 12_739);
        assert_eq!(slot(b"foo"), 12_182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"{user1000}.followers"));
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_eq!(hash_tag(b"foo{}{bar}"), None);
        assert_eq!(hash_tag(b"foo{{bar}}zap"), Some(&b"{bar"[..]));
        assert_eq!(hash_tag(b"{bull}:q:wait"), Some(&b"bull"[..]));
    }

    #[test]
    fn cluster_urls_name_their_seeds_and_keep_credentials_out_of_debug() {
        let url = ClusterUrl::parse("redis+cluster://alice:s3cret@10.0.0.1:7000,h2:7001/?x=1")
            .expect("valid")
            .expect("a cluster URL");
        assert_eq!(
            url.seeds,
            vec![("10.0.0.1".to_owned(), 7000), ("h2".to_owned(), 7001)]
        );
        assert_eq!(
            url.node_url("h3", 7002),
            "redis://alice:s3cret@h3:7002/?x=1"
        );
        assert!(!format!("{url:?}").contains("s3cret"));
        assert_eq!(ClusterUrl::parse("redis://h:1"), Ok(None));
        let tls = ClusterUrl::parse("rediss+cluster://h:1").expect("valid");
        assert_eq!(
            tls.map(|u| u.node_url("h", 1)).as_deref(),
            Some("rediss://h:1/")
        );
        assert!(ClusterUrl::parse("redis+cluster://h:1/3").is_err());
        assert!(ClusterUrl::parse("redis+cluster://u:p@/").is_err());
        assert!(ClusterUrl::parse("redis+cluster://h:x").is_err());
    }

    #[test]
    fn redirects_are_read_from_error_replies() {
        assert_eq!(
            Redirect::of("MOVED", "3999 127.0.0.1:6381", "h"),
            Some(Redirect::Moved("127.0.0.1".into(), 6381))
        );
        assert_eq!(
            Redirect::of("ASK", "3999 :6381", "h"),
            Some(Redirect::Ask("h".into(), 6381))
        );
        assert_eq!(Redirect::of("TRYAGAIN", "", "h"), Some(Redirect::Retry));
        // A refused write ran nothing: asked again where the primary is, and retried.
        assert_eq!(
            Redirect::of("NOREPLICAS", "Not enough good replicas to write.", "h"),
            Some(Redirect::Retry)
        );
        assert_eq!(Redirect::of("ERR", "x", "h"), None);
    }
}
