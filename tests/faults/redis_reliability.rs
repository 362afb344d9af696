//! Reliability and bad input on Redis through `Queue` (docs/RELIABILITY.md R4, R19, I1, I2,
//! I3, I5, I6): a killed connection, an unreachable server, a server that evicts keys or is out
//! of memory, a 10 MB payload byte for byte, a NUL in a job id, invalid names, numeric options checked against Node.js, and job hashes corrupted
//! by hand. What every store shares (size limits, id rules) is in the conformance suite.
//!
//! Connection faults run against a private `redis-server` (killed on drop), so killing clients
//! never disturbs the shared server; everything else uses the shared one under a unique prefix.

use crate::support;

use std::time::{Duration, Instant};

use crate::support::PrivateRedis;
use bullmq::backend::Range;
use bullmq::job::JobType;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{BackendErrorKind, Error};
use bullmq::{Backoff, JobId, JobOptions, JobState, Prefix, Queue, QueueName};
use serde_json::{Value, json};

async fn queue_at(url: &str, prefix: &str, name: &str) -> Queue<RedisBackend> {
    let options = RedisOptions::new(url).prefix(Prefix::new(prefix).expect("prefix"));
    let name = QueueName::new(name).expect("queue name");
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect");
    Queue::try_new(name, backend).expect("the backend is bound to this queue")
}

async fn queue(prefix: &str, name: &str) -> Queue<RedisBackend> {
    queue_at(&support::redis_url(), prefix, name).await
}

/// Queue `name` on the shared server under a fresh prefix, whose keys go when the guard drops.
async fn own_queue(name: &str) -> (support::PrefixGuard, Queue<RedisBackend>) {
    let cleanup = support::PrefixGuard::new();
    let q = queue(cleanup.as_str(), name).await;
    (cleanup, q)
}

async fn hget(key: &str, field: &str) -> Option<Vec<u8>> {
    let mut con = support::redis().await;
    redis::cmd("HGET")
        .arg(key)
        .arg(field)
        .query_async(&mut con)
        .await
        .expect("HGET")
}

fn problem_path(err: &Error) -> String {
    match err {
        Error::Invalid(v) => v.problems()[0].path.clone(),
        other => panic!("expected Error::Invalid, got {other:?}"),
    }
}

// ---------- R4: connections ----------

#[tokio::test]
async fn a_killed_connection_gives_a_connection_error_or_recovers_and_the_next_call_works() {
    let server = PrivateRedis::start();
    let q = queue_at(&server.url(), "bull", "kill").await;
    let id = q
        .add("x", &json!({"n": 1}), JobOptions::new())
        .await
        .expect("add")
        .id;
    let mut admin = server.admin().await;
    for round in 0..3 {
        // The private server has no other users: every normal client but this one is ours.
        let killed = support::kill_clients(&mut admin).await;
        assert!(
            killed >= 1,
            "round {round}: the queue's connection was not found"
        );
        let first = q.get_job(&id).await;
        match first {
            Ok(job) => assert!(job.is_some(), "round {round}: job lost"),
            Err(err) => assert_eq!(
                err.backend_kind(),
                Some(BackendErrorKind::Connection),
                "round {round}: {err}"
            ),
        }
        let job = q.get_job(&id).await.expect("the next call reconnects");
        assert_eq!(job.expect("still there").data, r#"{"n":1}"#);
        // Writes work again too.
        q.add("y", &json!({}), JobOptions::new())
            .await
            .expect("add after reconnect");
    }
    assert_eq!(q.count().await.expect("count"), 4);
}

#[tokio::test]
async fn connecting_where_nothing_listens_fails_fast_with_a_connection_error() {
    let port = support::free_port();
    let options = RedisOptions::new(format!("redis://127.0.0.1:{port}"));
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        RedisBackend::connect(&options, QueueName::new("nobody").expect("name")),
    )
    .await
    .expect("connect must not hang");
    let err = outcome.expect_err("nothing listens there");
    assert_eq!(
        err.backend_kind(),
        Some(BackendErrorKind::Connection),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}: connect retried instead of failing",
        started.elapsed()
    );
}

// ---------- R19: memory pressure and eviction ----------

/// R19: a server that may evict keys is reported when a backend connects (with
/// upstream's warning, through `tracing`), and one that is full and does not evict refuses
/// adds with its OOM error: each add either stores a whole job or fails, none is half written,
/// and adds work again once memory is freed.
#[tokio::test]
async fn an_evicting_server_is_reported_and_a_full_one_refuses_adds_whole() {
    let server = PrivateRedis::start();
    server.config_set("maxmemory-policy", "allkeys-lru").await;
    let options = RedisOptions::new(server.url());
    let name = QueueName::new("r19").expect("name");
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect");
    let info = backend.server().expect("INFO was read");
    assert_eq!(info.eviction_policy.as_deref(), Some("allkeys-lru"));
    assert!(!info.keeps_every_key());
    assert!(!info.version.is_empty());
    let skipped = RedisBackend::connect(&options.clone().skip_version_check(true), name.clone())
        .await
        .expect("connect without INFO");
    assert!(skipped.server().is_none());
    // Taken for the oldest supported Redis, as Node.js takes it: 2 ms is its shortest wait,
    // and waits still work without INFO.
    use bullmq::backend::{Blocking, Lifecycle};
    assert_eq!(skipped.block_timeouts().minimum, Duration::from_millis(2));
    assert_eq!(
        skipped
            .wait_for_job(Duration::from_millis(50))
            .await
            .expect("wait"),
        None
    );

    server.config_set("maxmemory-policy", "noeviction").await;
    server.config_set("maxmemory", "2mb").await;
    let queue = queue_at(&server.url(), "bull", "r19").await;
    assert!(queue.backend().server().expect("INFO").keeps_every_key());
    let payload = json!({"blob": "x".repeat(20_000)});
    let mut added = Vec::new();
    let refusal = loop {
        match queue.add("big", &payload, JobOptions::new()).await {
            Ok(job) => added.push(job.id),
            Err(err) => break err,
        }
        assert!(
            added.len() < 1_000,
            "a 2 MB server took {} jobs of 20 kB",
            added.len()
        );
    };
    assert_eq!(
        refusal.backend_kind(),
        Some(BackendErrorKind::Server),
        "{refusal}"
    );
    assert!(refusal.to_string().contains("OOM"), "{refusal}");
    assert!(!added.is_empty(), "some jobs fit before the limit");
    // Every acknowledged add is a whole job; the refused one left nothing behind.
    assert_eq!(queue.count().await.expect("count"), added.len() as u64);
    for id in &added {
        let job = queue.get_job(id).await.expect("get").expect("stored");
        assert_eq!(job.data_as::<Value>().expect("data"), payload);
    }

    server.config_set("maxmemory", "0").await;
    let after = queue
        .add("big", &payload, JobOptions::new())
        .await
        .expect("adds work again once memory is freed");
    assert!(queue.get_job(&after.id).await.expect("get").is_some());
}

// ---------- I1: payload size ----------

async fn support_exists(key: &str) -> bool {
    let mut con = support::redis().await;
    redis::cmd("EXISTS")
        .arg(key)
        .query_async::<i64>(&mut con)
        .await
        .expect("EXISTS")
        == 1
}

#[tokio::test]
async fn a_10_mb_payload_round_trips_byte_for_byte() {
    let (cleanup, q) = own_queue("huge").await;
    let prefix = cleanup.as_str();
    // Mixed ASCII, escapes and multi-byte text, so a lossy step would show.
    let unit = "bullmq \"quoted\" \\ tâche ✓ 日本語 \u{1F680}\n";
    let text = unit.repeat(10 * 1024 * 1024 / unit.len() + 1);
    let payload = json!({ "blob": text, "n": 1.5 });
    let expected = serde_json::to_string(&payload).expect("json");
    assert!(expected.len() > 10 * 1024 * 1024);

    let id = q
        .add("huge", &payload, JobOptions::new())
        .await
        .expect("add")
        .id;
    let raw = hget(&format!("{prefix}:huge:{id}"), "data")
        .await
        .expect("data field");
    assert!(
        raw == expected.as_bytes(),
        "stored data differs from the JSON we sent"
    );
    let job = q.get_job(&id).await.expect("get_job").expect("stored");
    assert!(
        job.data == expected,
        "read data differs from the JSON we sent"
    );
    let back: Value = serde_json::from_str(&job.data).expect("json");
    assert_eq!(back, payload);
}

// ---------- I2: job ids ----------

// Redis only: PostgreSQL text cannot hold a NUL (the other id rules are in conformance `queue`).
#[tokio::test]
async fn a_custom_id_with_a_nul_round_trips() {
    let (cleanup, q) = own_queue("ids").await;
    let prefix = cleanup.as_str();
    // Redis keys are binary-safe: the id is stored and read back verbatim.
    let id = "nul\0inside";
    let added = q
        .add("odd", &json!({"id": id}), JobOptions::new().job_id(id))
        .await
        .expect("added");
    assert_eq!(added.id.as_str(), id);
    assert!(
        support_exists(&format!("{prefix}:ids:{id}")).await,
        "not stored under its key"
    );
    let job = q
        .get_job(&JobId::from(id))
        .await
        .expect("get_job")
        .expect("found");
    assert_eq!(job.id.as_str(), id);
    assert_eq!(
        job.data,
        serde_json::to_string(&json!({"id": id})).expect("json")
    );
    assert_eq!(
        q.get_job_state(&JobId::from(id)).await.expect("state"),
        Some(JobState::Waiting)
    );
    let waiting = q.get_waiting(Range::ALL).await.expect("get_waiting");
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].id.as_str(), id);
}

// ---------- I3: names and prefixes ----------

#[test]
fn invalid_queue_names_and_prefixes_are_rejected() {
    for bad in [
        "",
        ":",
        "a:b",
        "tab\there",
        "nl\n",
        "bell\u{7}",
        "del\u{7f}",
        "{a",
        "a}",
        "}{",
    ] {
        let err = QueueName::new(bad).expect_err(bad);
        assert_eq!(err.problems()[0].path, "name", "{bad:?}");
    }
    for bad in ["", "a b", "\t", "x\u{0}", "{bull", "bull}", "}bull{"] {
        let err = Prefix::new(bad).expect_err(bad);
        assert_eq!(err.problems()[0].path, "prefix", "{bad:?}");
    }
    // Upstream allows `:` and hash tags in a prefix, and so do we.
    for good in ["bull", "app:bull", "{bull}", "{app}:jobs"] {
        Prefix::new(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
    }
    for good in ["emails", "{emails}", "tâche"] {
        QueueName::new(good).unwrap_or_else(|e| panic!("{good:?}: {e}"));
    }
}

// ---------- I5: numeric options, against Node.js ----------

/// What Node.js BullMQ 6.7.6 does with each case: `{ok, id, delay, opts}` or `{error}`.
fn node_numeric_cases(prefix: &str) -> Value {
    let script = r"
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
const url = process.env.REDIS_URL;
const r = new IORedis(url);
const con = new IORedis(url, { maxRetriesPerRequest: null });
const q = new Queue('i5', { connection: con, prefix: process.env.PREFIX });
const cases = {
  fractional_priority: { priority: 1.5 },
  priority_over_limit: { priority: 2097152 },
  negative_delay: { delay: -1000 },
  attempts_zero: { attempts: 0 },
  unknown_backoff: { attempts: 2, backoff: { type: 'nope', delay: 10 } },
};
const out = {};
for (const [name, opts] of Object.entries(cases)) {
  try {
    const job = await q.add(name, {}, opts);
    const raw = await r.hgetall(`${process.env.PREFIX}:i5:${job.id}`);
    out[name] = { ok: true, id: job.id, delay: raw.delay, opts: JSON.parse(raw.opts) };
  } catch (e) { out[name] = { ok: false, error: e.message }; }
}
console.log(JSON.stringify(out));
await q.close(); con.disconnect(); r.disconnect();
";
    let stdout = support::run_node_args(
        &["--input-type=module", "-e", script],
        &[("PREFIX", prefix)],
    );
    serde_json::from_str(stdout.trim()).expect("node printed JSON")
}

#[tokio::test]
async fn numeric_options_behave_as_in_node() {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let node = node_numeric_cases(&prefix);

    // Node refuses these two at add time.
    assert_eq!(
        node["fractional_priority"]["error"],
        "Priority should not be float"
    );
    assert_eq!(
        node["priority_over_limit"]["error"],
        "Priority should be between 0 and 2097151"
    );
    // A fractional priority cannot be expressed here (`priority: u32`); over the limit is
    // refused before any write, like Node.
    let ours = queue(&prefix, "ours").await;
    let err = ours
        .add("p", &json!({}), JobOptions::new().priority(2_097_152))
        .await
        .expect_err("over the limit");
    assert_eq!(problem_path(&err), "priority");
    assert!(!support_exists(&format!("{prefix}:ours:id")).await);

    // Node accepts attempts 0 and an unknown backoff type (the latter only fails when a worker
    // computes a retry without a custom strategy); so do we, storing the same options.
    for (case, opts) in [
        ("attempts_zero", JobOptions::new().attempts(0)),
        (
            "unknown_backoff",
            JobOptions::new()
                .attempts(2)
                .backoff(Backoff::custom("nope").delay(Duration::from_millis(10))),
        ),
    ] {
        assert_eq!(node[case]["ok"], true, "{case}: {}", node[case]);
        let id = ours.add(case, &json!({}), opts).await.expect(case).id;
        let raw = hget(&format!("{prefix}:ours:{id}"), "opts")
            .await
            .expect("opts");
        let stored: Value = serde_json::from_slice(&raw).expect("json");
        assert_eq!(stored, node[case]["opts"], "{case}");
    }

    // Node accepts a negative delay and stores it (delay "-1000", opts.delay -1000) in a waiting
    // job. Ours cannot express one (`Duration`); we read it as Node runs it: not delayed, with
    // the stored option kept verbatim.
    let neg = &node["negative_delay"];
    assert_eq!(neg["ok"], true, "{neg}");
    assert_eq!(neg["delay"], "-1000");
    assert_eq!(neg["opts"]["delay"], -1000);
    let node_queue = queue(&prefix, "i5").await;
    let id = JobId::from(neg["id"].as_str().expect("id"));
    assert_eq!(
        node_queue.get_job_state(&id).await.expect("state"),
        Some(JobState::Waiting)
    );
    let job = node_queue
        .get_job(&id)
        .await
        .expect("readable")
        .expect("found");
    assert_eq!(job.delay, Duration::ZERO);
    assert_eq!(job.opts.extra.get("delay"), Some(&serde_json::json!(-1000)));
    assert_eq!(job.invalid_opts.len(), 1);
}

// ---------- I6: job hashes corrupted by another runtime ----------

/// Writes a job hash with raw `HSET` and lists it in `wait`, as a broken writer would.
async fn plant(prefix: &str, queue: &str, id: &str, fields: &[(&str, Vec<u8>)]) {
    let mut con = support::redis().await;
    let key = format!("{prefix}:{queue}:{id}");
    let mut hset = redis::cmd("HSET");
    hset.arg(&key);
    for (f, v) in fields {
        hset.arg(*f).arg(v.as_slice());
    }
    let _: () = hset.query_async(&mut con).await.expect("HSET");
    let _: () = redis::cmd("LPUSH")
        .arg(format!("{prefix}:{queue}:wait"))
        .arg(id)
        .query_async(&mut con)
        .await
        .expect("LPUSH");
}

fn base(extra: &[(&'static str, &str)]) -> Vec<(&'static str, Vec<u8>)> {
    let mut fields = vec![
        ("name", b"n".to_vec()),
        ("data", b"{}".to_vec()),
        ("opts", br#"{"attempts":0}"#.to_vec()),
        ("timestamp", b"1700000000000".to_vec()),
        ("delay", b"0".to_vec()),
        ("priority", b"0".to_vec()),
    ];
    for (k, v) in extra {
        fields.retain(|(f, _)| f != k);
        fields.push((k, v.as_bytes().to_vec()));
    }
    fields
}

fn deep(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// `Ok(())` when tolerated, else the decode error's field; any other error fails the test.
fn decode_outcome(
    id: &str,
    got: bullmq::Result<Option<bullmq::Job>>,
) -> Result<bullmq::Job, &'static str> {
    match got {
        Ok(Some(job)) => Ok(job),
        Ok(None) => panic!("{id}: job not found"),
        Err(Error::JobDecode(e)) => {
            assert_eq!(e.job_id, id);
            Err(e.field)
        }
        Err(other) => panic!("{id}: expected Error::JobDecode, got {other}"),
    }
}

#[tokio::test]
async fn corrupt_job_hashes_give_typed_errors_or_are_tolerated_as_node_does() {
    let (cleanup, q) = own_queue("bad").await;
    let prefix = cleanup.as_str();
    let deep_json = deep(10_000);

    let no_data: Vec<(&str, Vec<u8>)> = base(&[])
        .into_iter()
        .filter(|(f, _)| *f != "data")
        .collect();
    let mut not_utf8 = base(&[]);
    not_utf8.retain(|(k, _)| *k != "data");
    not_utf8.push(("data", vec![b'"', 0xff, 0xfe, b'"']));
    let deep_opts = format!(r#"{{"zz":{deep_json}}}"#);
    let planted = [
        ("no-data", no_data),
        ("data-not-json", base(&[("data", "{not json")])),
        ("data-not-utf8", not_utf8),
        ("opts-not-json", base(&[("opts", "attempts=3")])),
        ("timestamp-text", base(&[("timestamp", "yesterday")])),
        (
            "numbers-as-lua-text",
            base(&[("timestamp", "1.7e+12"), ("atm", " 2 ")]),
        ),
        (
            "unknown-opts",
            base(&[("opts", r#"{"attempts":3,"zz":{"future":true}}"#)]),
        ),
        ("returnvalue-not-json", base(&[("returnvalue", "done!")])),
        ("deep-data", base(&[("data", deep_json.as_str())])),
        ("deep-opts", base(&[("opts", deep_opts.as_str())])),
        (
            "deep-returnvalue",
            base(&[("returnvalue", deep_json.as_str())]),
        ),
        ("good", base(&[("data", r#"{"fine":true}"#)])),
    ];
    for (id, fields) in &planted {
        plant(prefix, "bad", id, fields).await;
    }

    let get = |id: &'static str| {
        let q = &q;
        async move { decode_outcome(id, q.get_job(&JobId::from(id)).await) }
    };

    // Node reads a missing `data` as `{}`.
    assert_eq!(get("no-data").await.expect("tolerated").data, "{}");
    // Node's `JSON.parse` throws on these; ours names the field.
    assert_eq!(get("data-not-json").await.err(), Some("data"));
    assert_eq!(get("opts-not-json").await.err(), Some("opts"));
    assert_eq!(get("timestamp-text").await.err(), Some("timestamp"));
    assert_eq!(get("deep-data").await.err(), Some("data"));
    // Not UTF-8 (Node would read it lossily, with U+FFFD): refused as a typed decode error,
    // whose field is the whole hash (the field name is only known at run time) and whose reason
    // names `data`; never a panic.
    match q.get_job(&JobId::from("data-not-utf8")).await {
        Err(Error::JobDecode(e)) => {
            assert_eq!(e.field, "(hash)", "{e}");
            assert!(e.reason.contains(r#""data""#), "{e}");
        }
        other => panic!("expected Error::JobDecode, got {other:?}"),
    }
    // Lua's number text and padding read as `parseInt` reads them.
    let lua = get("numbers-as-lua-text").await.expect("tolerated");
    assert_eq!(lua.timestamp, 1_700_000_000_000);
    assert_eq!(lua.attempts_made, 2);
    // Unknown options are kept for the round trip (forward compatibility).
    let unknown = get("unknown-opts").await.expect("tolerated");
    assert_eq!(unknown.opts.attempts, Some(3));
    assert_eq!(unknown.opts.extra.get("zz"), Some(&json!({"future": true})));
    // Node keeps a return value that is not JSON as text (bullmq#2196); deep text is text too.
    assert_eq!(
        get("returnvalue-not-json")
            .await
            .expect("tolerated")
            .return_value
            .as_deref(),
        Some("done!")
    );
    assert_eq!(
        get("deep-returnvalue")
            .await
            .expect("tolerated")
            .return_value
            .as_deref(),
        Some(deep_json.as_str())
    );
    // Deep unknown options: refused by the JSON reader's depth limit, named, no stack overflow.
    assert_eq!(get("deep-opts").await.err(), Some("opts"));
    assert_eq!(get("good").await.expect("fine").data, r#"{"fine":true}"#);
}

#[tokio::test]
async fn one_corrupt_job_in_get_jobs_is_skipped_and_reported() {
    let (cleanup, q) = own_queue("list").await;
    let prefix = cleanup.as_str();
    for i in 0..3 {
        q.add("ok", &json!({"i": i}), JobOptions::new())
            .await
            .expect("add");
    }
    plant(prefix, "list", "broken", &base(&[("data", "{oops")])).await;
    let waiting = [JobType::State(JobState::Waiting)];
    // One corrupt job does not hide the good ones: `get_jobs` leaves it out, and
    // `get_jobs_checked` names it with the field.
    let jobs = q.get_jobs(&waiting, Range::ALL).await.expect("get_jobs");
    let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "the good jobs must all be listed: {ids:?}");
    let checked = q
        .get_jobs_checked(&waiting, Range::ALL)
        .await
        .expect("get_jobs_checked");
    assert_eq!(checked.jobs.len(), 3);
    let [(id, e)] = checked.undecodable.as_slice() else {
        panic!("one undecodable job expected: {:?}", checked.undecodable);
    };
    assert_eq!((id.as_str(), e.field), ("broken", "data"), "{e}");
    // The good jobs stay readable one by one.
    for id in ["1", "2", "3"] {
        assert!(
            q.get_job(&JobId::from(id))
                .await
                .expect("get_job")
                .is_some()
        );
    }
}
