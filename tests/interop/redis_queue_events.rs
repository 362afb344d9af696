//! `QueueEvents`, `QueueEventsProducer` and `wait_until_finished` against real Redis and
//! Node.js BullMQ 6.7.6: Rust reads what Node's workers, queues and producers write, Node's
//! `QueueEvents` reads what Rust publishes, and a killed connection loses no event.

use crate::support;
use crate::support::custom_events::{assert_bad_custom_events_refused, numbered};
use crate::support::delayed::add_delayed;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bullmq::backend::{ClientRole, EventId, Lifecycle};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{ActiveJob, CancellationToken, JobError, Processor, Worker, WorkerOptions};
use bullmq::{Backoff, Deduplication, JobId, JobOptions, JobState, Prefix, Queue, QueueName};
use bullmq::{
    EventSubscription, QueueEvent, QueueEvents, QueueEventsOptions, QueueEventsProducer,
    ReceivedEvent, WaitError,
};
use serde_json::{Value, json};

use crate::process_jobs::{Outcomes, add_outcomes};

/// A queue on `url` under a fresh prefix, cleaned up when the guard drops.
async fn setup(
    url: &str,
    queue: &str,
) -> (support::PrefixGuard, RedisBackend, Queue<RedisBackend>) {
    let prefix = support::unique_prefix();
    let options = RedisOptions::new(url).prefix(Prefix::new(&prefix).expect("prefix"));
    let name = QueueName::new(queue).expect("queue name");
    let backend = RedisBackend::connect(&options, name.clone())
        .await
        .expect("connect");
    let queue = Queue::try_new(name, backend.clone()).expect("the backend is bound to this queue");
    (support::PrefixGuard(prefix), backend, queue)
}

/// A reader that is already listening.
async fn reader(backend: &RedisBackend, opts: QueueEventsOptions) -> QueueEvents<RedisBackend> {
    let events = QueueEvents::new(backend.clone(), opts).expect("queue events");
    tokio::time::timeout(Duration::from_secs(5), events.wait_until_ready())
        .await
        .expect("ready in time")
        .expect("ready");
    events
}

/// Runs a Node.js helper off the async threads (the reader keeps reading meanwhile).
async fn node(script: &str, prefix: &str, queue: &str, args: &[&str]) -> String {
    let mut all = vec![script.to_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    let env = [
        ("PREFIX".to_owned(), prefix.to_owned()),
        ("QUEUE".to_owned(), queue.to_owned()),
    ];
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = all.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        support::run_node_args(&args, &env)
    })
    .await
    .expect("node helper task")
}

/// Node's `process-jobs.mjs` worker until `expect` jobs finished.
async fn node_worker(prefix: &str, queue: &str, expect: usize) {
    let expect = expect.to_string();
    let (prefix, queue) = (prefix.to_owned(), queue.to_owned());
    tokio::task::spawn_blocking(move || {
        support::run_node(
            "process-jobs.mjs",
            &[("PREFIX", &prefix), ("QUEUE", &queue), ("EXPECT", &expect)],
        )
    })
    .await
    .expect("node worker task");
}

/// Events until (and with) the first one named `stop`; errors are collected apart.
async fn collect_until(
    sub: &mut EventSubscription,
    stop: &str,
) -> (Vec<Arc<ReceivedEvent>>, Vec<String>) {
    support::events::collect_until(sub, stop, Duration::from_secs(60)).await
}

fn find(events: &[Arc<ReceivedEvent>], what: impl Fn(&QueueEvent) -> bool) -> Vec<&QueueEvent> {
    events
        .iter()
        .map(|e| &e.event)
        .filter(|e| what(e))
        .collect()
}

fn id(job: &bullmq::Job) -> JobId {
    job.id.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_reads_every_event_type_written_by_node_and_rust() {
    let (guard, backend, queue) = setup(&support::redis_url(), "every").await;
    let prefix = guard.0.clone();
    let events = reader(&backend, QueueEventsOptions::new()).await;
    let mut sub = events.subscribe();

    // Processed by a Node.js worker: completed, progress, retried with a delay then failed for
    // good (retries-exhausted), failed without retry.
    let Outcomes {
        ok,
        progress,
        fail,
        fatal,
    } = add_outcomes(&queue, Duration::from_millis(50)).await;
    node_worker(&prefix, "every", 4).await;

    // Queue-side events.
    let later = add_delayed(&queue, "later", Duration::from_secs(3600)).await;
    // The second add of each is refused as a duplicate or deduplicated; the first is kept.
    let add_twice = |name: &'static str, opts: JobOptions| {
        let queue = &queue;
        async move {
            let kept = queue
                .add(name, &json!({}), opts.clone())
                .await
                .expect("add");
            queue.add(name, &json!({}), opts).await.expect("add again");
            kept
        }
    };
    add_twice("dup", JobOptions::new().job_id("dup-1")).await;
    let kept = add_twice(
        "dedup",
        JobOptions::new().deduplication(Deduplication::new("d-1")),
    )
    .await;
    assert!(queue.remove(&id(&later), false).await.expect("remove"));
    queue.pause().await.expect("pause");
    queue.resume().await.expect("resume");
    let cleaned = queue
        .clean(Duration::ZERO, 0, JobState::Completed)
        .await
        .expect("clean");
    // Stalled: Node takes the waiting `dup-1` and loses its lock.
    let stalled: String =
        serde_json::from_str(&node("queue-events.mjs", &prefix, "every", &["stall"]).await)
            .expect("stalled id");
    let flow: Vec<String> = serde_json::from_str(
        &node(
            "queue-events.mjs",
            &prefix,
            "every",
            &["flow", "parent", "child"],
        )
        .await,
    )
    .expect("flow ids");
    node(
        "queue-events.mjs",
        &prefix,
        "every",
        &["publish", "the-end", r#"{"jobId":"x","n":5}"#],
    )
    .await;

    let (seen, errors) = collect_until(&mut sub, "the-end").await;
    assert!(errors.is_empty(), "read errors: {errors:?}");
    let saw = |event: QueueEvent| seen.iter().any(|e| e.event == event);
    let is = |job: &JobId| {
        let job = job.clone();
        move |e: &QueueEvent| e.job_id() == Some(job.as_str())
    };

    // added / waiting for every job added, with its name.
    assert!(saw(QueueEvent::Added {
        job_id: id(&ok),
        name: "ok".into()
    }));
    assert!(saw(QueueEvent::Waiting {
        job_id: id(&ok),
        prev: None
    }));
    // active, progress, completed with the JSON return value, as Node's worker wrote them.
    assert!(saw(QueueEvent::Active {
        job_id: id(&ok),
        prev: Some("waiting".into())
    }));
    assert!(saw(QueueEvent::Progress {
        job_id: id(&progress),
        data: json!({"pct": 50})
    }));
    assert!(saw(QueueEvent::Completed {
        job_id: id(&ok),
        returnvalue: json!({"double": 42}),
        prev: Some("active".into()),
    }));
    assert!(saw(QueueEvent::Completed {
        job_id: id(&progress),
        returnvalue: json!("done"),
        prev: Some("active".into()),
    }));
    // The retried job: delayed by its backoff, back to waiting, then failed for good.
    let fail_events = find(&seen, is(&id(&fail)));
    let delayed_at = fail_events.iter().find_map(|e| match e {
        QueueEvent::Delayed { delay, .. } => Some(*delay),
        _ => None,
    });
    assert!(
        delayed_at.is_some_and(|d| d > 1_600_000_000_000),
        "{fail_events:#?}"
    );
    assert!(fail_events.contains(&&QueueEvent::Failed {
        job_id: id(&fail),
        failed_reason: "boom 7".into(),
        prev: Some("active".into()),
    }));
    assert!(fail_events.contains(&&QueueEvent::RetriesExhausted {
        job_id: id(&fail),
        attempts_made: 2,
    }));
    // Unrecoverable: failed at once, attempts left, so no retries-exhausted.
    let fatal_events = find(&seen, is(&id(&fatal)));
    assert!(fatal_events.contains(&&QueueEvent::Failed {
        job_id: id(&fatal),
        failed_reason: "no retry".into(),
        prev: Some("active".into()),
    }));
    assert!(
        !fatal_events
            .iter()
            .any(|e| matches!(e, QueueEvent::RetriesExhausted { .. }))
    );
    assert!(saw(QueueEvent::Drained));
    // The delayed add: `delay` is when it is due (Unix ms), as Node's `Number(delay)`.
    let due = find(&seen, is(&id(&later)))
        .into_iter()
        .find_map(|e| match e {
            QueueEvent::Delayed { delay, .. } => Some(*delay),
            _ => None,
        })
        .expect("delayed event");
    let added_at = later.timestamp;
    assert_eq!(due, added_at + 3_600_000);
    assert!(saw(QueueEvent::Removed {
        job_id: id(&later),
        prev: Some("delayed".into())
    }));
    assert!(saw(QueueEvent::Duplicated {
        job_id: JobId::from("dup-1")
    }));
    let deduplicated = find(&seen, |e| matches!(e, QueueEvent::Deduplicated { .. }));
    assert_eq!(deduplicated.len(), 1, "{deduplicated:#?}");
    assert!(
        matches!(deduplicated[0], QueueEvent::Deduplicated { job_id, deduplication_id, .. }
        if *job_id == id(&kept) && deduplication_id == "d-1")
    );
    let paused = seen
        .iter()
        .position(|e| e.event == QueueEvent::Paused)
        .expect("paused");
    let resumed = seen
        .iter()
        .position(|e| e.event == QueueEvent::Resumed)
        .expect("resumed");
    assert!(paused < resumed);
    assert!(saw(QueueEvent::Cleaned {
        count: u64::try_from(cleaned.len()).expect("count")
    }));
    assert_eq!(cleaned.len(), 2);
    assert_eq!(stalled, "dup-1");
    assert!(saw(QueueEvent::Stalled {
        job_id: JobId::from("dup-1")
    }));
    assert!(saw(QueueEvent::WaitingChildren {
        job_id: JobId::from(flow[0].as_str()),
        prev: None
    }));
    // A custom event: its fields kept as text, in order.
    let last = seen.last().expect("the-end");
    assert_eq!(
        last.event,
        QueueEvent::Custom {
            name: "the-end".into(),
            fields: vec![("jobId".into(), "x".into()), ("n".into(), "5".into())],
        }
    );
    assert_eq!(last.field("event"), Some("the-end"));

    // Every upstream event type was decoded, none left malformed; ids increase.
    let names: std::collections::BTreeSet<&str> = seen.iter().map(|e| e.event.name()).collect();
    for name in [
        "added",
        "waiting",
        "delayed",
        "active",
        "progress",
        "completed",
        "failed",
        "retries-exhausted",
        "stalled",
        "removed",
        "deduplicated",
        "duplicated",
        "waiting-children",
        "cleaned",
        "drained",
        "paused",
        "resumed",
    ] {
        assert!(names.contains(name), "no `{name}` event among {names:?}");
    }
    assert!(find(&seen, |e| matches!(e, QueueEvent::Malformed { .. })).is_empty());
    assert_eq!(events.last_event_id(), Some(last.id.clone()));
    events.close().await;
}

/// A Node.js `QueueEvents` reading from `last_id` in the background, until `stop`.
struct NodeListener {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl NodeListener {
    fn start(prefix: &str, queue: &str, last_id: &EventId, stop: &str) -> Self {
        let mut child = Command::new("node")
            .args(["queue-events.mjs", "listen", last_id.as_str(), stop])
            .current_dir(support::node_dir())
            .env("REDIS_URL", support::redis_url())
            .env("PREFIX", prefix)
            .env("QUEUE", queue)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start node");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let listener = Self { child, lines };
        let first = listener
            .lines
            .recv_timeout(Duration::from_secs(15))
            .expect("node listener ready");
        assert_eq!(first, r#"{"ready":true}"#);
        listener
    }

    /// Every event Node emitted, once it stopped.
    async fn finish(mut self) -> Vec<Value> {
        tokio::task::spawn_blocking(move || {
            let mut events = Vec::new();
            loop {
                let line = self
                    .lines
                    .recv_timeout(Duration::from_secs(30))
                    .unwrap_or_else(|e| panic!("node listener: {e}; got {events:#?}"));
                let value: Value = serde_json::from_str(&line).expect("JSON line");
                if value == json!({"stopped": true}) {
                    break;
                }
                events.push(value);
            }
            let status = self.child.wait().expect("wait for node");
            assert!(status.success(), "node listener failed: {status}");
            events
        })
        .await
        .expect("listener task")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_events_cross_between_rust_and_node() {
    let (guard, backend, _queue) = setup(&support::redis_url(), "custom").await;
    let prefix = guard.0.clone();
    let producer = QueueEventsProducer::new(backend.clone());
    let events = reader(&backend, QueueEventsOptions::new()).await;
    let mut sub = events.subscribe().only(&["node-event", "stop"]);
    let start = backend_last_id(&backend).await;
    let listener = NodeListener::start(&prefix, "custom", &start, "stop");

    // Rust → Node: Node's QueueEvents emits it under its name with the fields as its args.
    let rust_id = producer
        .publish_event("rust-event", &[("jobId", "j1"), ("answer", "42")])
        .await
        .expect("publish");
    // Node → Rust: a QueueEventsProducer's event, numbers stored as text.
    node(
        "queue-events.mjs",
        &prefix,
        "custom",
        &[
            "publish",
            "node-event",
            r#"{"jobId":"j2","count":3,"label":"é ✓"}"#,
            "50",
        ],
    )
    .await;
    producer
        .publish_event("stop", &[])
        .await
        .expect("publish stop");

    let seen = listener.finish().await;
    assert_eq!(
        seen[0],
        json!({"event": "rust-event", "args": {"jobId": "j1", "answer": "42"}, "id": rust_id.as_str()})
    );
    assert_eq!(seen[1]["event"], "node-event");
    assert_eq!(seen.len(), 3, "{seen:#?}");

    let (got, errors) = collect_until(&mut sub, "stop").await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        got.len(),
        2,
        "the filter keeps node-event and stop only: {got:#?}"
    );
    assert_eq!(
        got[0].event,
        QueueEvent::Custom {
            name: "node-event".into(),
            fields: vec![
                ("jobId".into(), "j2".into()),
                ("count".into(), "3".into()),
                ("label".into(), "é ✓".into()),
            ],
        }
    );
    assert_eq!(got[0].event.job_id(), Some("j2"));
    assert_eq!(got[0].id.as_str(), seen[1]["id"].as_str().expect("node id"));

    // A custom event cannot hide its name or be unnamed, nor go to a stream capped at 0.
    assert_bad_custom_events_refused(&producer).await;
    events.close().await;
}

/// The stream's newest id, read with a plain command (as a caller persisting ids would).
async fn backend_last_id(backend: &RedisBackend) -> EventId {
    use bullmq::backend::Events;
    backend.last_event_id().await.expect("last id")
}

/// Kills the connection named `name` once there is one (it must be `what` within `within`);
/// the kill's outcome (the connection may be gone by then).
async fn kill_named(
    admin: &mut redis::aio::MultiplexedConnection,
    name: &str,
    within: Duration,
    what: &str,
) -> redis::RedisResult<()> {
    let deadline = Instant::now() + within;
    let id = loop {
        if let Some(id) = client_id(admin, name).await {
            break id;
        }
        assert!(Instant::now() < deadline, "`{name}` not {what}");
        // Poll interval of a loop that names, when it gives up, what is still pending.
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query_async(admin)
        .await
}

/// The client id of the connection named `name`.
async fn client_id(con: &mut redis::aio::MultiplexedConnection, name: &str) -> Option<i64> {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(con)
        .await
        .ok()?;
    list.lines().find_map(|line| {
        let fields: HashMap<&str, &str> = line
            .split(' ')
            .filter_map(|kv| kv.split_once('='))
            .collect();
        (fields.get("name") == Some(&name))
            .then(|| fields.get("id").and_then(|id| id.parse().ok()))
            .flatten()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connections_lose_no_event() {
    let server = support::PrivateRedis::start();
    let (_guard, backend, _queue) = setup(&server.url(), "kill").await;
    let client = redis::Client::open(server.url()).expect("client");
    let mut admin = client
        .get_multiplexed_async_connection()
        .await
        .expect("admin");
    let opts = QueueEventsOptions::new()
        .blocking_timeout(Duration::from_secs(5))
        .retry_delay(Duration::from_millis(50));
    let events = reader(&backend, opts).await;
    let mut sub = events.subscribe();
    let name = backend.client_name(&ClientRole::QueueEvents);
    assert!(name.ends_with(":qe"), "{name}");
    let producer = QueueEventsProducer::new(backend.clone());

    // Killed before the first event: the reader started from `$`, resolved to an id, so what
    // is published while it reconnects is still read.
    let mut kills = 0;
    let first = kill_named(&mut admin, &name, Duration::from_secs(5), "connected").await;
    first.expect("kill");
    kills += 1;
    const TOTAL: usize = 300;
    for i in 0..TOTAL {
        let n = i.to_string();
        producer
            .publish_event_max("tick", &[("n", &n)], 100_000)
            .await
            .expect("publish");
        if i % 60 == 30 {
            // Kill the reader's connection mid-stream, wherever it is, once it is back from
            // the last kill (a kill while it reconnects would find nothing to kill).
            let back = Duration::from_secs(10);
            let killed = kill_named(&mut admin, &name, back, "reconnected").await;
            if killed.is_ok() {
                kills += 1;
            }
        }
    }
    producer.publish_event("stop", &[]).await.expect("publish");
    let (got, errors) = collect_until(&mut sub, "stop").await;
    let ns = numbered(&got, "n");
    assert_eq!(
        ns,
        (0..TOTAL).collect::<Vec<_>>(),
        "every event once, in order"
    );
    assert!(kills >= 3, "only {kills} kills");
    assert!(!errors.is_empty(), "the lost connections were reported");
    // The reconnected connection is named again.
    assert!(client_id(&mut admin, &name).await.is_some());
    events.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_until_finished_answers_completed_failed_finished_and_timeout() {
    let (guard, backend, queue) = setup(&support::redis_url(), "wait").await;
    let prefix = guard.0.clone();
    let events = Arc::new(reader(&backend, QueueEventsOptions::new()).await);
    let ok = queue
        .add("ok", &json!({"i": 21}), JobOptions::new())
        .await
        .expect("add");
    let fail = queue
        .add("fail", &json!({"i": 3}), JobOptions::new())
        .await
        .expect("add");

    let (ok_id, fail_id) = (id(&ok), id(&fail));
    let ttl = Some(Duration::from_secs(20));
    let waiting = async {
        (
            events.wait_until_finished(&ok_id, ttl).await,
            events.wait_until_finished(&fail_id, ttl).await,
        )
    };
    // The first wait listens as soon as it is first polled (`join!` polls it first), and the
    // worker starts once the reader is ready: the jobs finish while the wait listens, so this
    // exercises the event path.
    let work = async {
        events
            .wait_until_ready()
            .await
            .expect("the reader is ready");
        node_worker(&prefix, "wait", 2).await;
    };
    let ((completed, failed), ()) = tokio::join!(waiting, work);
    assert_eq!(completed.expect("completed"), json!({"double": 42}));
    match failed {
        Err(WaitError::Failed { job_id, reason }) => {
            assert_eq!((job_id, reason.as_str()), (id(&fail), "boom 3"));
        }
        other => panic!("expected a failure, got {other:?}"),
    }

    // Already finished: answered from the job's state, at once.
    let started = Instant::now();
    let again = queue
        .job(id(&ok))
        .wait_until_finished(&events, Some(Duration::from_secs(5)))
        .await;
    assert_eq!(again.expect("completed"), json!({"double": 42}));
    assert!(started.elapsed() < Duration::from_secs(1));
    let err = events
        .wait_until_finished(&id(&fail), None)
        .await
        .expect_err("failed");
    assert_eq!(err.to_string(), format!("job {} failed: boom 3", fail.id));

    // Never processed: the ttl runs out.
    let idle = queue
        .add("ok", &json!({"i": 1}), JobOptions::new())
        .await
        .expect("add");
    let started = Instant::now();
    let timed_out = events
        .wait_until_finished(&id(&idle), Some(Duration::from_millis(300)))
        .await;
    assert!(
        matches!(timed_out, Err(WaitError::TimedOut { ref job_id, .. }) if *job_id == id(&idle))
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    let missing = events.wait_until_finished(&JobId::from("nope"), None).await;
    assert!(
        matches!(missing, Err(WaitError::NotFound { .. })),
        "{missing:?}"
    );

    // Node's own waitUntilFinished agrees on a job Node processed.
    let node_view = node(
        "queue-events.mjs",
        &prefix,
        "wait",
        &["wait", ok.id.as_str(), "5000"],
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&node_view).expect("json"),
        json!({"returnvalue": {"double": 42}})
    );

    // Closing the reader ends a wait in progress.
    // The wait listens as soon as `join!` first polls it; the reader closes after that.
    let idle = id(&idle);
    let pending = tokio::time::timeout(
        Duration::from_secs(2),
        events.wait_until_finished(&idle, None),
    );
    let (closed, ()) = tokio::join!(pending, events.close());
    let closed = closed.expect("the wait ends when the reader closes");
    assert!(
        matches!(closed, Err(WaitError::Closed { .. })),
        "{closed:?}"
    );
}

/// The same four jobs as `process-jobs.mjs` handles, processed by a Rust worker.
async fn rust_worker(backend: RedisBackend) -> Worker<RedisBackend, impl Processor<RedisBackend>> {
    let name = backend.queue().clone();
    let opts = WorkerOptions::new().concurrency(4);
    Worker::new(
        name,
        backend,
        opts,
        |job: ActiveJob<RedisBackend>, _cancel: CancellationToken| async move {
            let i = job.data_as::<Value>()?["i"].as_i64().unwrap_or_default();
            match job.name.as_str() {
                "ok" => Ok(json!({"double": i * 2})),
                "progress" => {
                    job.update_progress(&json!({"pct": 50})).await?;
                    job.log("first line").await?;
                    job.log("second line").await?;
                    Ok(json!("done"))
                }
                "fail" => Err(JobError::failed(format!("boom {i}"))),
                "fatal" => Err(JobError::unrecoverable("no retry")),
                other => Err(JobError::failed(format!("unexpected job name {other}"))),
            }
        },
    )
    .await
    .expect("rust worker")
}

/// Node's view of one queue's events, per job in stream order, with what differs between two
/// runs (stream ids, due timestamps) blanked out.
fn per_job(events: &[Value]) -> std::collections::BTreeMap<String, Vec<Value>> {
    let mut jobs: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
    for e in events {
        let mut args = e["args"].clone();
        if let Some(delay) = args.get_mut("delay") {
            assert!(delay.as_f64().is_some_and(|d| d > 1.6e12), "{e}");
            *delay = json!("<due>");
        }
        let job = args["jobId"].as_str().unwrap_or("-").to_owned();
        jobs.entry(job).or_default().push(json!([e["event"], args]));
    }
    jobs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_sees_the_same_events_from_a_rust_worker_as_from_a_node_worker() {
    let url = support::redis_url();
    let (guard, node_backend, node_queue) = setup(&url, "by-node").await;
    let prefix = guard.0.clone();
    let options = RedisOptions::new(&url).prefix(Prefix::new(&prefix).expect("prefix"));
    let rust_name = QueueName::new("by-rust").expect("name");
    let rust_backend = RedisBackend::connect(&options, rust_name.clone())
        .await
        .expect("connect");
    let rust_queue = Queue::try_new(rust_name.clone(), rust_backend.clone())
        .expect("the backend is bound to this queue");

    let listen_node = NodeListener::start(
        &prefix,
        "by-node",
        &backend_last_id(&node_backend).await,
        "stop",
    );
    let listen_rust = NodeListener::start(
        &prefix,
        "by-rust",
        &backend_last_id(&rust_backend).await,
        "stop",
    );
    let mut ids = Vec::new();
    for queue in [&node_queue, &rust_queue] {
        let retried = JobOptions::new()
            .attempts(2)
            .backoff(Backoff::fixed(Duration::from_millis(50)));
        ids.push(
            queue
                .add("ok", &json!({"i": 21}), JobOptions::new())
                .await
                .expect("add")
                .id,
        );
        ids.push(
            queue
                .add("progress", &json!({}), JobOptions::new())
                .await
                .expect("add")
                .id,
        );
        ids.push(
            queue
                .add("fail", &json!({"i": 7}), retried)
                .await
                .expect("add")
                .id,
        );
        ids.push(
            queue
                .add("fatal", &json!({}), JobOptions::new().attempts(5))
                .await
                .expect("add")
                .id,
        );
    }
    node_worker(&prefix, "by-node", 4).await;
    // The Rust worker runs until Rust's own QueueEvents says every job finished.
    let events = reader(&rust_backend, QueueEventsOptions::new()).await;
    let worker_backend = RedisBackend::connect(&options, rust_name)
        .await
        .expect("connect");
    let worker = rust_worker(worker_backend).await;
    for id in &ids[4..] {
        let finished = events
            .wait_until_finished(id, Some(Duration::from_secs(20)))
            .await;
        assert!(
            !matches!(finished, Err(WaitError::TimedOut { .. })),
            "{finished:?}"
        );
    }
    worker.close().await;
    events.close().await;
    for backend in [&node_backend, &rust_backend] {
        QueueEventsProducer::new(backend.clone())
            .publish_event("stop", &[])
            .await
            .expect("stop");
    }

    let by_node = per_job(&listen_node.finish().await);
    let by_rust = per_job(&listen_rust.finish().await);
    for job in ["1", "2", "3", "4"] {
        assert!(
            by_node.get(job).is_some_and(|e| e.len() >= 4),
            "job {job}: {by_node:#?}"
        );
        assert_eq!(
            by_rust.get(job),
            by_node.get(job),
            "job {job}: Rust worker vs Node worker"
        );
    }
    let progress = &by_rust["2"];
    assert!(progress.contains(&json!(["progress", {"jobId": "2", "data": {"pct": 50}}])));
    assert!(
        progress.contains(
            &json!(["completed", {"jobId": "2", "returnvalue": "done", "prev": "active"}])
        )
    );
    assert!(
        by_rust["3"].contains(&json!(["retries-exhausted", {"jobId": "3", "attemptsMade": "2"}]))
    );
    // Both drained the queue.
    assert!(
        by_rust["-"].contains(&json!(["drained", null])),
        "{:?}",
        by_rust["-"]
    );
    assert!(by_node["-"].contains(&json!(["drained", null])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_entries_are_kept_and_the_reader_carries_on() {
    let (guard, backend, queue) = setup(&support::redis_url(), "malformed").await;
    let events = reader(&backend, QueueEventsOptions::new()).await;
    let mut sub = events.subscribe();
    let mut con = support::redis().await;
    let stream = format!("{}:malformed:events", guard.0);
    let job = queue
        .add("x", &json!({}), JobOptions::new())
        .await
        .expect("add");
    let waiting = {
        let id = id(&job);
        let events = &events;
        async move {
            events
                .wait_until_finished(&id, Some(Duration::from_secs(5)))
                .await
        }
    };
    // `join!` polls the wait first, so it listens before anything is written; the events are
    // written once the reader knows where it reads from.
    let write = async {
        events
            .wait_until_ready()
            .await
            .expect("the reader is ready");
        for fields in [
            vec![("event", "progress"), ("jobId", "1"), ("data", "{not json")],
            vec![("jobId", "1"), ("what", "no event field")],
            vec![("event", "delayed"), ("jobId", "1"), ("delay", "soon")],
            vec![
                ("event", "completed"),
                ("jobId", job.id.as_str()),
                ("returnvalue", "{oops"),
            ],
            vec![("event", "stop")],
        ] {
            let _: String = redis::cmd("XADD")
                .arg(&stream)
                .arg("*")
                .arg(fields)
                .query_async(&mut con)
                .await
                .expect("xadd");
        }
    };
    let (finished, ()) = tokio::join!(waiting, write);
    // The completion ends the wait even though its return value is not JSON.
    assert!(
        matches!(&finished, Err(WaitError::ReturnValue { raw, .. }) if raw == "{oops"),
        "{finished:?}"
    );
    let (got, errors) = collect_until(&mut sub, "stop").await;
    assert!(errors.is_empty(), "{errors:?}");
    let malformed: Vec<(&str, &str)> = got
        .iter()
        .filter_map(|e| match &e.event {
            QueueEvent::Malformed { name, reason } => Some((name.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(malformed.len(), 4, "{got:#?}");
    assert_eq!(malformed[0].0, "progress");
    assert!(malformed[0].1.contains("not JSON"), "{}", malformed[0].1);
    assert_eq!(malformed[1].0, "");
    assert_eq!(malformed[2].0, "delayed");
    assert_eq!(malformed[3].0, "completed");
    // The raw fields stay available.
    let no_name = got
        .iter()
        .find(|e| e.event.name().is_empty())
        .expect("the entry without a name");
    assert_eq!(no_name.field("what"), Some("no event field"));
    assert_eq!(no_name.field("jobId"), Some("1"));
    events.close().await;
}
