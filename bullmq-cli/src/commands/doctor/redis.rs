//! `doctor` on Redis (standalone, Cluster, or the node a Cluster URL names first).

use std::time::Duration;

use bullmq::redis::{MINIMUM_REDIS_VERSION, RECOMMENDED_REDIS_VERSION, ServerInfo};
use redis::aio::MultiplexedConnection;

use super::finding::{self, Finding};
use crate::context::Ctx;
use crate::fail::{Failure, cause};

/// How long one reply may take.
const REPLY: Duration = Duration::from_secs(10);

/// The commands bullmq sends or its scripts call (docs/SECURITY.md's ACL), each with
/// arguments of a valid shape; `K` stands for a key under the prefix.
const NEEDED: &[&str] = &[
    "ping",
    "hello 3",
    "info",
    "client setname x",
    "client getname",
    "evalsha 0000000000000000000000000000000000000000 1 K",
    "eval x 1 K",
    "script load x",
    "multi",
    "exec",
    "discard",
    "bzpopmin K 1",
    "xread streams K 0",
    "xrevrange K + -",
    "xadd K * f v",
    "xtrim K maxlen 1",
    "xlen K",
    "xrange K - +",
    "xdel K 1-1",
    "get K",
    "set K v",
    "del K",
    "unlink K",
    "exists K",
    "type K",
    "time",
    "rename K K",
    "incr K",
    "incrby K 1",
    "persist K",
    "pexpire K 1",
    "pexpireat K 1",
    "pttl K",
    "scan 0",
    "hget K f",
    "hset K f v",
    "hmset K f v",
    "hmget K f",
    "hgetall K",
    "hdel K f",
    "hexists K f",
    "hincrby K f 1",
    "hlen K",
    "hscan K 0",
    "lindex K 0",
    "llen K",
    "lpop K",
    "lpos K v",
    "lpush K v",
    "lrange K 0 1",
    "lrem K 0 v",
    "lset K 0 v",
    "ltrim K 0 1",
    "rpop K",
    "rpoplpush K K",
    "rpush K v",
    "sadd K m",
    "scard K",
    "sismember K m",
    "smembers K",
    "srem K m",
    "sscan K 0",
    "zadd K 1 m",
    "zcard K",
    "zcount K 0 1",
    "zlexcount K - +",
    "zpopmin K",
    "zrange K 0 1",
    "zrangebylex K - +",
    "zrangebyscore K 0 1",
    "zrem K m",
    "zremrangebyrank K 0 1",
    "zremrangebyscore K 0 1",
    "zrevrange K 0 1",
    "zrevrangebyscore K 1 0",
    "zscore K m",
];

/// Asks the server, for each command of ARGV (words split on spaces, `K` replaced by
/// KEYS[1]), whether the current user may run it; returns the refused ones.
const ACL_PROBE: &str = r"
local refused = {}
for _, line in ipairs(ARGV) do
  local words = {}
  for word in string.gmatch(line, '%S+') do
    if word == 'K' then word = KEYS[1] end
    table.insert(words, word)
  end
  local ok, allowed = pcall(redis.acl_check_cmd, unpack(words))
  if ok and not allowed then table.insert(refused, line) end
end
return refused
";

pub(super) async fn checks(ctx: &Ctx, scheme: &str) -> Result<Vec<Finding>, Failure> {
    let prefix = ctx.store.prefix().unwrap_or("bull").to_owned();
    let mut findings = Vec::new();
    let url = ctx.store.url();
    let node_url = if scheme.ends_with("+cluster") {
        findings.push(hash_tag(&prefix));
        first_node(url, scheme)
    } else if scheme.ends_with("+sentinel") {
        return Err(Failure::usage(
            "doctor reads the server itself and does not follow Sentinel; run it with the \
             primary's redis:// URL (`SENTINEL GET-MASTER-ADDR-BY-NAME <name>` names it)",
        ));
    } else {
        url.to_owned()
    };
    let mut con = connect(ctx, &node_url).await?;
    let info: String = call(ctx, &mut con, redis::cmd("INFO").arg("everything")).await?;
    let server = ServerInfo::from_info(&info);
    findings.push(version(&server));
    findings.push(eviction(&info));
    findings.push(memory(&info));
    findings.push(persistence(&info));
    findings.push(permissions(ctx, &mut con, &prefix).await?);
    findings.push(workers_listing(&mut con, &prefix).await);
    if !scheme.ends_with("+cluster") {
        findings.extend(meta_versions(ctx, &mut con, &prefix).await?);
    }
    let before = finding::now_ms();
    let (secs, micros): (u64, u64) = call(ctx, &mut con, &redis::cmd("TIME")).await?;
    let after = finding::now_ms();
    findings.push(finding::clock(before, secs * 1000 + micros / 1000, after));
    Ok(findings)
}

/// `redis://` and the first node of a `redis+cluster://a,b` URL (its user information kept).
fn first_node(url: &str, scheme: &str) -> String {
    let plain = scheme.trim_end_matches("+cluster");
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (authority, tail) = rest
        .find(['/', '?'])
        .map_or((rest, ""), |i| (&rest[..i], &rest[i..]));
    let (user, hosts) = authority
        .rsplit_once('@')
        .map_or(("", authority), |(u, h)| (u, h));
    let host = hosts.split(',').next().unwrap_or(hosts);
    let at = if user.is_empty() { "" } else { "@" };
    format!("{plain}://{user}{at}{host}{tail}")
}

/// A Cluster prefix must carry a hash tag, so that every key of a queue is in one slot.
fn hash_tag(prefix: &str) -> Finding {
    let tagged = prefix
        .find('{')
        .and_then(|open| prefix[open + 1..].find('}').map(|close| close > 0))
        .unwrap_or(false);
    if tagged {
        Finding::ok(
            "cluster hash tag",
            format!("prefix {prefix:?} has a hash tag"),
        )
    } else {
        Finding::problem(
            "cluster hash tag",
            format!(
                "prefix {prefix:?} has no hash tag: a queue's keys spread over slots and its \
                 scripts are refused (CROSSSLOT)"
            ),
            format!(
                "use a prefix with a hash tag, e.g. --prefix '{{{prefix}}}' (Node.js: \
                 prefix: '{{{prefix}}}'), in every producer and worker"
            ),
        )
    }
}

async fn connect(ctx: &Ctx, url: &str) -> Result<MultiplexedConnection, Failure> {
    let fail = |e: &dyn std::fmt::Display| {
        Failure::failed(format!(
            "cannot connect to {}: {}; check that the server runs and --url names it",
            ctx.store.target(),
            cause(e)
        ))
    };
    let client = redis::Client::open(url).map_err(|e| {
        Failure::usage(format!(
            "cannot use the store {}: {}",
            ctx.store.target(),
            cause(&e)
        ))
    })?;
    tokio::time::timeout(REPLY, client.get_multiplexed_async_connection())
        .await
        .map_err(|e| fail(&e))?
        .map_err(|e| fail(&e))
}

async fn call<T: redis::FromRedisValue>(
    ctx: &Ctx,
    con: &mut MultiplexedConnection,
    cmd: &redis::Cmd,
) -> Result<T, Failure> {
    let what = cmd
        .args_iter()
        .next()
        .map_or_else(String::new, |a| match a {
            redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
            _ => String::new(),
        });
    let fail = |e: &dyn std::fmt::Display| {
        Failure::failed(format!(
            "cannot run {what} on {}: {}; check the user's permissions (ACL) and the server's logs",
            ctx.store.target(),
            cause(e)
        ))
    };
    tokio::time::timeout(REPLY, cmd.query_async(con))
        .await
        .map_err(|e| fail(&e))?
        .map_err(|e| fail(&e))
}

/// A field of `INFO`'s text.
fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

fn version(server: &ServerInfo) -> Finding {
    let found = format!("{:?} {}", server.database_type, server.version);
    let dotted = |(a, b, c): (u32, u32, u32)| format!("{a}.{b}.{c}");
    if server.is_redis_older_than(MINIMUM_REDIS_VERSION) {
        Finding::problem(
            "server",
            found,
            format!(
                "upgrade the server to {} or newer",
                dotted(RECOMMENDED_REDIS_VERSION)
            ),
        )
    } else if server.is_redis_older_than(RECOMMENDED_REDIS_VERSION) {
        Finding::note(
            "server",
            found,
            format!(
                "{} or newer is recommended",
                dotted(RECOMMENDED_REDIS_VERSION)
            ),
        )
    } else {
        Finding::ok("server", found)
    }
}

fn eviction(info: &str) -> Finding {
    let policy = field(info, "maxmemory_policy").unwrap_or("unknown");
    if policy == "noeviction" {
        Finding::ok("eviction policy", "maxmemory-policy noeviction")
    } else {
        Finding::problem(
            "eviction policy",
            format!(
                "maxmemory-policy {policy}: the server may delete jobs' keys when memory is full"
            ),
            "CONFIG SET maxmemory-policy noeviction, and set it in redis.conf (or your provider's \
             parameter group) so a restart keeps it",
        )
    }
}

fn memory(info: &str) -> Finding {
    let used: u64 = field(info, "used_memory")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let max: u64 = field(info, "maxmemory")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / 1_048_576.0);
    if max == 0 {
        return Finding::ok("memory", format!("{} used, no maxmemory", mib(used)));
    }
    let found = format!("{} used of maxmemory {}", mib(used), mib(max));
    if used.saturating_mul(10) >= max.saturating_mul(9) {
        Finding::problem(
            "memory",
            found,
            "raise maxmemory, or remove finished jobs (removeOnComplete / removeOnFail, \
             `bullmq clean`): at the limit every add is refused (OOM)",
        )
    } else {
        Finding::ok("memory", found)
    }
}

fn persistence(info: &str) -> Finding {
    let aof = field(info, "aof_enabled") == Some("1");
    let rdb = field(info, "rdb_last_save_time").is_some()
        && field(info, "rdb_saves").is_some_and(|n| n != "0")
        || field(info, "rdb_changes_since_last_save").is_some() && aof;
    if aof {
        Finding::ok("persistence", "append-only file on")
    } else if rdb {
        Finding::note(
            "persistence",
            "snapshots only (RDB): a crash loses the jobs since the last one",
            "turn on the append-only file (appendonly yes) where jobs must survive a crash",
        )
    } else {
        Finding::note(
            "persistence",
            "no append-only file: a restart or crash may lose jobs",
            "turn on the append-only file (appendonly yes) where jobs must survive a restart",
        )
    }
}

/// Whether the current user may run everything bullmq needs on keys under the prefix.
async fn permissions(
    ctx: &Ctx,
    con: &mut MultiplexedConnection,
    prefix: &str,
) -> Result<Finding, Failure> {
    let user: String = match call(ctx, con, redis::cmd("ACL").arg("WHOAMI")).await {
        Ok(user) => user,
        Err(_) => "the current user".to_owned(),
    };
    let key = format!("{prefix}:bullmq-doctor");
    let reply: redis::RedisResult<Vec<String>> = redis::cmd("EVAL")
        .arg(ACL_PROBE)
        .arg(1)
        .arg(&key)
        .arg(NEEDED)
        .query_async(con)
        .await;
    Ok(match reply {
        Ok(refused) if refused.is_empty() => Finding::ok(
            "permissions",
            format!("{user} may run every command bullmq needs on keys {prefix}:*"),
        ),
        Ok(refused) => Finding::problem(
            "permissions",
            format!(
                "{user} may not run {} on keys {prefix}:*",
                refused_list(&refused)
            ),
            format!(
                "grant them (docs/SECURITY.md has the whole ACL): ACL SETUSER {user} {}",
                refused
                    .iter()
                    .map(|l| acl_rule(l))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        ),
        Err(e) if e.code() == Some("NOPERM") => Finding::problem(
            "permissions",
            format!(
                "{user} may not run scripts (EVAL) on keys {prefix}:*: {}",
                cause(&e)
            ),
            format!(
                "grant +eval +evalsha and the keys: ACL SETUSER {user} ~{prefix}:* +eval +evalsha (docs/SECURITY.md has the whole ACL)"
            ),
        ),
        // Servers before 7.0 have no `redis.acl_check_cmd`.
        Err(e) => Finding::note(
            "permissions",
            format!("not checked: {}", cause(&e)),
            "Redis 7 or newer lets doctor check the ACL",
        ),
    })
}

/// `zadd, client setname` from the refused lines.
fn refused_list(refused: &[String]) -> String {
    refused
        .iter()
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            match words.as_slice() {
                ["client" | "script" | "acl", sub, ..] => format!("{} {sub}", words[0]),
                [cmd, ..] => (*cmd).to_owned(),
                [] => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `+zadd` or `+client|setname` for a refused line.
fn acl_rule(line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["client" | "script", sub, ..] => format!("+{}|{sub}", words[0]),
        [cmd, ..] => format!("+{cmd}"),
        [] => String::new(),
    }
}

/// `bullmq workers` (and `Queue::get_workers`) read `CLIENT LIST`, an admin command.
async fn workers_listing(con: &mut MultiplexedConnection, prefix: &str) -> Finding {
    let key = format!("{prefix}:bullmq-doctor");
    let reply: redis::RedisResult<Vec<String>> = redis::cmd("EVAL")
        .arg(ACL_PROBE)
        .arg(1)
        .arg(&key)
        .arg("client list")
        .query_async(con)
        .await;
    match reply {
        Ok(refused) if refused.is_empty() => Finding::ok(
            "workers listing",
            "CLIENT LIST allowed: `bullmq workers` works",
        ),
        Ok(_) => Finding::note(
            "workers listing",
            "CLIENT LIST refused: `bullmq workers` and Queue::get_workers cannot list workers",
            "grant +client|list to the user that lists workers (only that one)",
        ),
        Err(_) => Finding::ok("workers listing", "not checked (see permissions)"),
    }
}

/// The version each queue's `meta` records (the last client that wrote it) against this
/// client's scripts.
async fn meta_versions(
    ctx: &Ctx,
    con: &mut MultiplexedConnection,
    prefix: &str,
) -> Result<Vec<Finding>, Failure> {
    let ours = bullmq::LIB_VERSION;
    let major = |v: &str| {
        v.rsplit(':')
            .next()
            .and_then(|n| n.split('.').next())
            .map(str::to_owned)
    };
    let pattern = format!("{prefix}:*:meta");
    let mut cursor = 0_u64;
    let mut metas = Vec::new();
    loop {
        let (next, keys): (u64, Vec<String>) = call(
            ctx,
            con,
            redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000),
        )
        .await?;
        metas.extend(keys);
        cursor = next;
        if cursor == 0 || metas.len() >= 10_000 {
            break;
        }
    }
    metas.sort();
    let mut older = Vec::new();
    let mut newer_major = Vec::new();
    for key in &metas {
        let version: Option<String> =
            call(ctx, con, redis::cmd("HGET").arg(key).arg("version")).await?;
        let queue = key
            .strip_prefix(&format!("{prefix}:"))
            .and_then(|k| k.strip_suffix(":meta"))
            .unwrap_or(key)
            .to_owned();
        match version {
            Some(v) if v == ours => {}
            Some(v) if major(&v) != major(ours) => newer_major.push(format!("{queue} ({v})")),
            Some(v) => older.push(format!("{queue} ({v})")),
            None => {}
        }
    }
    let mut findings = Vec::new();
    if newer_major.is_empty() {
        findings.push(Finding::ok(
            "queue versions",
            format!(
                "{} queue(s) under {prefix:?}; none written by another major than {ours}",
                metas.len()
            ),
        ));
    } else {
        findings.push(Finding::problem(
            "queue versions",
            format!(
                "written by another major version: {}",
                newer_major.join(", ")
            ),
            format!(
                "run every producer and worker of these queues on one major version ({ours} \
                 here): scripts of different majors disagree on the keys' layout"
            ),
        ));
    }
    if !older.is_empty() {
        findings.push(Finding::note(
            "queue versions",
            format!(
                "last written by another version of the same major: {}",
                older.join(", ")
            ),
            "fine within a major; upgrade the older clients when convenient",
        ));
    }
    Ok(findings)
}
