//! Jobs another runtime wrote oddly (raw `HSET`/`LPUSH`, as a buggy or hostile writer would),
//! processed by a real `Worker`: each ends completed or failed with a reason that names the
//! field, none is lost (every list counted), none runs twice or forever, and the listing getters
//! return the good jobs and report the bad ones.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{JobId, JobOptions, Prefix, Processor, Queue, QueueName, Worker};
use serde_json::json;

use crate::support;
use crate::support::PrefixGuard;
use crate::support::odd_jobs::{End, Runs, assert_listed, counting_worker};
use crate::support::wait::eventually;

/// How long the corpus may take to settle.
const WAIT: Duration = Duration::from_secs(30);

/// One odd job: its id (bytes), the fields to write over a well-formed hash (`None` deletes the
/// field), how many times its id is pushed to `wait`, whether it has a hash at all.
struct Case {
    id: Vec<u8>,
    fields: Vec<(&'static str, Option<Vec<u8>>)>,
    pushes: usize,
    hash: bool,
    end: End,
}

fn case(id: &str, fields: &[(&'static str, Option<&str>)], end: End) -> Case {
    Case {
        id: id.as_bytes().to_vec(),
        fields: fields
            .iter()
            .map(|(k, v)| (*k, v.map(|v| v.as_bytes().to_vec())))
            .collect(),
        pushes: 1,
        hash: true,
        end,
    }
}

/// The most common odd job: a well-formed hash with one field written over by `value`.
fn with_field(id: &str, field: &'static str, value: &str, end: End) -> Case {
    case(id, &[(field, Some(value))], end)
}

fn corpus() -> Vec<Case> {
    use End::{Completed, Failed};
    let mut cases = vec![
        // Counters the scripts `HINCRBY`: Lua cannot count them, Node's `parseInt` gives NaN.
        with_field("atm-text", "atm", "abc", Completed(1)),
        with_field("ats-text", "ats", "abc", Completed(1)),
        with_field("stc-text", "stc", "abc", Completed(1)),
        with_field("legacy-attempts-text", "attemptsMade", "abc", Completed(1)),
        with_field("atm-negative", "atm", "-3", Completed(1)),
        with_field("atm-huge", "atm", "99999999999999999999", Completed(1)),
        with_field("ats-fraction", "ats", "1.5", Completed(1)),
        // A failing job whose counts are garbled still runs out of attempts.
        case(
            "fail-atm-text",
            &[("atm", Some("abc")), ("opts", Some(r#"{"attempts":2}"#))],
            Failed(2, "boom"),
        ),
        case(
            "fail-legacy-text",
            &[
                ("attemptsMade", Some("x")),
                ("opts", Some(r#"{"attempts":3}"#)),
            ],
            Failed(3, "boom"),
        ),
        // Bad JSON: Node's `JSON.parse` throws; the job fails naming the field.
        with_field("data-bad-json", "data", "{not json", Failed(0, "`data`")),
        with_field("opts-bad-json", "opts", "{bad", Failed(0, "`opts`")),
        with_field(
            "progress-bad-json",
            "progress",
            "{oops",
            Failed(0, "`progress`"),
        ),
        // Options of the wrong types are read as absent, as the scripts' `tonumber` does.
        with_field(
            "opts-wrong-types",
            "opts",
            r#"{"attempts":"abc","delay":"x","lifo":"yes","removeOnComplete":"z","backoff":7}"#,
            Completed(1),
        ),
        with_field(
            "opts-nested-nulls",
            "opts",
            r#"{"attempts":null,"backoff":{"type":null}}"#,
            Completed(1),
        ),
        // Fields Node tolerates.
        with_field(
            "stacktrace-not-array",
            "stacktrace",
            "not an array",
            Completed(1),
        ),
        with_field("returnvalue-bad-json", "returnvalue", "{oops", Completed(1)),
        with_field("name-empty", "name", "", Completed(1)),
        case("timestamp-missing", &[("timestamp", None)], Completed(1)),
        with_field("delay-negative", "delay", "-5", Completed(1)),
        with_field(
            "timestamp-text",
            "timestamp",
            "soon",
            Failed(0, "`timestamp`"),
        ),
        with_field("priority-text", "priority", "abc", Failed(0, "`priority`")),
        // Flow fields pointing nowhere or unreadable.
        with_field(
            "parent-key-nowhere",
            "parentKey",
            "bull:nowhere:404",
            Completed(1),
        ),
        with_field("parent-bad-json", "parent", "{bad", Failed(0, "`parent`")),
    ];
    // A field that is not UTF-8.
    let mut bad_bytes = case("data-not-utf8", &[], Failed(0, "not UTF-8"));
    bad_bytes
        .fields
        .push(("data", Some(b"{\"a\":\"\xff\"}".to_vec())));
    cases.push(bad_bytes);
    // An id that is not UTF-8: finished under its exact bytes, run once.
    let mut raw_id = case("", &[], Completed(1));
    raw_id.id = b"raw-\xff\xfe".to_vec();
    cases.push(raw_id);
    // An id in wait with no hash: never run as an empty job.
    let mut no_hash = case("no-hash", &[], Failed(0, "did not exist"));
    no_hash.hash = false;
    cases.push(no_hash);
    // The same id in wait twice: run once.
    let mut twice = case("pushed-twice", &[], Completed(1));
    twice.pushes = 2;
    cases.push(twice);
    cases
}

/// A queue under a prefix of its own, whose keys go when the guard drops.
struct OddQueue {
    guard: PrefixGuard,
    name: QueueName,
    queue: Queue<RedisBackend>,
}

impl OddQueue {
    async fn new(name: &str) -> Self {
        let guard = PrefixGuard::new();
        let name = QueueName::new(name).unwrap();
        let queue = Queue::try_new(name.clone(), Self::connect(guard.as_str(), &name).await)
            .expect("the backend is bound to this queue");
        Self { guard, name, queue }
    }

    /// A fresh connection to queue `name` under `prefix` (a worker closes the backend it is
    /// given).
    async fn connect(prefix: &str, name: &QueueName) -> RedisBackend {
        let options = RedisOptions::new(support::redis_url()).prefix(Prefix::new(prefix).unwrap());
        RedisBackend::connect(&options, name.clone()).await.unwrap()
    }

    /// A worker counting its runs per job id, on a connection of its own, checking for stalled
    /// jobs every `stalled`.
    async fn counting_worker(
        &self,
        stalled: Duration,
    ) -> (Worker<RedisBackend, impl Processor<RedisBackend>>, Runs) {
        let backend = Self::connect(self.guard.as_str(), &self.name).await;
        counting_worker(self.name.clone(), backend, stalled).await
    }
}

#[tokio::test]
async fn odd_job_hashes_all_end_in_a_list_once() {
    let odd = OddQueue::new("odd").await;
    let (prefix, queue) = (odd.guard.as_str(), &odd.queue);
    // A well-formed job first (it also writes the queue's meta, as any producer would).
    let control = queue
        .add("control", &json!({}), JobOptions::new())
        .await
        .unwrap()
        .id;

    let mut con = support::redis().await;
    let key = |id: &[u8]| [format!("{prefix}:odd:").as_bytes(), id].concat();
    let cases = corpus();
    for c in &cases {
        if c.hash {
            let mut fields: Vec<(&str, Vec<u8>)> = vec![
                ("name", b"odd".to_vec()),
                ("data", b"{}".to_vec()),
                ("opts", b"{}".to_vec()),
                ("timestamp", support::now_ms().to_string().into_bytes()),
                ("delay", b"0".to_vec()),
                ("priority", b"0".to_vec()),
            ];
            for (k, v) in &c.fields {
                fields.retain(|(f, _)| f != k);
                if let Some(v) = v {
                    fields.push((k, v.clone()));
                }
            }
            let _: () = redis::cmd("HSET")
                .arg(key(&c.id))
                .arg(&fields)
                .query_async(&mut con)
                .await
                .unwrap();
        }
        for _ in 0..c.pushes {
            let _: () = redis::cmd("LPUSH")
                .arg(format!("{prefix}:odd:wait"))
                .arg(&c.id)
                .query_async(&mut con)
                .await
                .unwrap();
        }
    }
    let _: () = redis::cmd("ZADD")
        .arg(format!("{prefix}:odd:marker"))
        .arg(0)
        .arg("0")
        .query_async(&mut con)
        .await
        .unwrap();

    let (worker, runs) = odd.counting_worker(Duration::from_millis(500)).await;

    // Every job reaches a finished set, the control job included.
    let total = cases.len() + 1;
    let finished = || async {
        let mut con = support::redis().await;
        let (completed, failed): (usize, usize) = redis::pipe()
            .zcard(format!("{prefix}:odd:completed"))
            .zcard(format!("{prefix}:odd:failed"))
            .query_async(&mut con)
            .await
            .unwrap();
        completed + failed
    };
    eventually("every odd job finished", WAIT, || async {
        finished().await == total
    })
    .await;
    worker.close().await;

    // None left anywhere else, none lost.
    let (wait, active, delayed, prioritized, children): (usize, usize, usize, usize, usize) =
        redis::pipe()
            .llen(format!("{prefix}:odd:wait"))
            .llen(format!("{prefix}:odd:active"))
            .zcard(format!("{prefix}:odd:delayed"))
            .zcard(format!("{prefix}:odd:prioritized"))
            .zcard(format!("{prefix}:odd:waiting-children"))
            .query_async(&mut con)
            .await
            .unwrap();
    assert_eq!(
        (wait, active, delayed, prioritized, children),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(finished().await, total);

    let runs = runs.lock().unwrap().clone();
    for c in &cases {
        let shown = String::from_utf8_lossy(&c.id).into_owned();
        let in_set = |set: &'static str| {
            let id = c.id.clone();
            async move {
                let mut con = support::redis().await;
                let score: Option<f64> = redis::cmd("ZSCORE")
                    .arg(format!("{prefix}:odd:{set}"))
                    .arg(id)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                score.is_some()
            }
        };
        let ran = runs.get(&c.id).copied().unwrap_or(0);
        let reason: Option<String> = redis::cmd("HGET")
            .arg(key(&c.id))
            .arg("failedReason")
            .query_async(&mut con)
            .await
            .unwrap();
        let reached = in_set(c.end.state()).await;
        c.end
            .assert_reached(&shown, reached, ran, reason.as_deref());
    }
    assert_eq!(runs.get(control.as_bytes()), Some(&1));

    // The listings give every readable job and name the others.
    let bad = [
        "data-bad-json",
        "opts-bad-json",
        "progress-bad-json",
        "timestamp-text",
        "priority-text",
        "data-not-utf8",
    ];
    let jobs = assert_listed(queue, total, &bad, "field").await;
    let raw = JobId::from_bytes(b"raw-\xff\xfe");
    assert!(
        jobs.iter().any(|j| j.id == raw),
        "the non-UTF-8 id is listed with its bytes"
    );
}

#[tokio::test]
async fn a_stalled_job_with_a_garbled_count_is_recovered_not_lost() {
    // As a crashed worker of another runtime leaves them: in active, unlocked, in the stalled
    // set, with a stalled count the stalled check's `HINCRBY` cannot count.
    let odd = OddQueue::new("oddstall").await;
    let prefix = odd.guard.as_str();
    odd.queue
        .add("warm", &json!({}), JobOptions::new())
        .await
        .unwrap();
    let mut con = support::redis().await;
    let base = format!("{prefix}:oddstall:");
    let ids: [&[u8]; 2] = [b"stalled-stc-text", b"stalled-\xff"];
    for id in ids {
        let key = [base.as_bytes(), id].concat();
        let _: () = redis::pipe()
            .hset_multiple(
                &key,
                &[
                    ("name", "odd"),
                    ("data", "{}"),
                    ("opts", "{}"),
                    ("timestamp", "1"),
                    ("ats", "1"),
                    ("stc", "abc"),
                ],
            )
            .lpush(format!("{base}active"), id)
            .sadd(format!("{base}stalled"), id)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    let (worker, runs) = odd.counting_worker(Duration::from_millis(300)).await;
    eventually("both stalled jobs completed", WAIT, || async {
        let mut con = support::redis().await;
        let n: usize = redis::cmd("ZCARD")
            .arg(format!("{base}completed"))
            .query_async(&mut con)
            .await
            .unwrap();
        n == 3
    })
    .await;
    worker.close().await;
    let runs = runs.lock().unwrap().clone();
    for id in ids {
        assert_eq!(runs.get(id), Some(&1), "{}", String::from_utf8_lossy(id));
        let stc: String = redis::cmd("HGET")
            .arg([base.as_bytes(), id].concat())
            .arg("stc")
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(stc, "1", "counted from 0 once it could be");
    }
}
