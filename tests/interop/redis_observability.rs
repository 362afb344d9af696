//! Observability and flow getters on Redis, side by side with Node.js BullMQ 6.7.6: the same
//! queue read through `tests/node/queue-op.mjs` and through `Queue`, answers compared.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;
use crate::support::finishing;
use crate::support::held::fetch_params;
use crate::support::redis_queue::RedisQueue;

use std::time::Duration;

use bullmq::backend::{
    AddJobs, Blocking, ClientRole, CompleteArgs, DependencyKind, FailArgs, FieldUpdates, FlowNode,
    Lifecycle, NewJob, ParentKeyOpts, Queries, Range, Transitions,
};
use bullmq::clock::ManualClock;
use bullmq::job::JobType;
use bullmq::redis::RedisBackend;
use bullmq::{Job, JobId, JobOptions, ParentOptions, Prefix, QueueName};
use serde_json::{Value, json};

/// Where the stopped clock starts.
const T0: u64 = 1_700_000_000_000;

/// A worker's settings that keep metrics (ten data points), so that finishing a job counts it.
fn metrics_worker() -> std::sync::Arc<bullmq::backend::WorkerSettings> {
    std::sync::Arc::new(bullmq::backend::WorkerSettings {
        max_metrics_size: Some(10),
        ..bullmq::backend::WorkerSettings::default()
    })
}

/// A queue on the shared server whose producer reads the time from `clock`.
struct Ctx {
    rq: RedisQueue,
    clock: ManualClock,
}

impl Ctx {
    async fn new(name: &str) -> Self {
        let clock = ManualClock::new(T0);
        Self {
            rq: RedisQueue::shared_on_clock(name, clock.clone()).await,
            clock,
        }
    }

    fn backend(&self) -> &RedisBackend {
        self.rq.queue.backend()
    }

    /// Node.js' answer to `queue-op.mjs <op> <args…>` on this queue.
    fn node(&self, op: &str, args: &[&str]) -> Value {
        let mut all = vec!["queue-op.mjs", op];
        all.extend_from_slice(args);
        let out = support::run_node_args(
            &all,
            &[
                ("PREFIX", self.rq.prefix.as_str()),
                ("QUEUE", self.rq.name.as_str()),
            ],
        );
        serde_json::from_str(out.trim()).expect("node prints JSON")
    }

    /// Node.js' answers to many `queue-op.mjs` calls (`[op, args…]`), in one Node.js run.
    fn node_batch(&self, calls: &[Vec<String>]) -> Vec<Value> {
        let calls = serde_json::to_string(calls).unwrap();
        serde_json::from_value(self.node("batch", &[&calls])).unwrap()
    }

    /// Asserts each `(label, ours, call)`: ours equals Node.js' answer to the call.
    fn assert_node(&self, checks: Vec<(String, Value, Vec<String>)>) {
        let calls: Vec<Vec<String>> = checks.iter().map(|(_, _, c)| c.clone()).collect();
        let answers = self.node_batch(&calls);
        assert_eq!(answers.len(), checks.len());
        for ((label, ours, _), node) in checks.into_iter().zip(answers) {
            assert_eq!(ours, node, "{label}");
        }
    }

    async fn add(&self, name: &str, opts: JobOptions) -> Job {
        self.rq
            .queue
            .add(name, &json!({ "n": name }), opts)
            .await
            .expect("add")
    }

    /// Takes the next job with `token`.
    async fn take(&self, token: &str) -> Job {
        let params = fetch_params(token, Duration::from_secs(30), Some("w"));
        let next = self.backend().move_to_active(&params).await.expect("take");
        next.job.expect("a job").job.expect("readable")
    }

    async fn complete(&self, job: &Job, token: &str, value: &str) {
        let args = CompleteArgs {
            worker: metrics_worker(),
            ..finishing::complete_args(token, value)
        };
        let done = self.backend().move_to_completed(job, &args).await;
        done.expect("complete");
    }

    /// Fails with `reason` and no stack trace.
    async fn fail(&self, job: &Job, token: &str, reason: &str) {
        let args = FailArgs {
            failed_reason: reason.to_owned(),
            fields: FieldUpdates::default(),
            worker: metrics_worker(),
            ..finishing::fail_args(token)
        };
        let done = self.backend().move_to_failed(job, &args).await;
        done.expect("fail");
    }

    /// A queue with jobs in every common state, metrics over several minutes and a job log:
    /// 2 waiting, 3 prioritized, 2 delayed, 1 active, 3 completed, 2 failed.
    async fn populate(&self) {
        for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
            self.add(name, JobOptions::new()).await;
        }
        for (name, p) in [("p5", 5), ("p1", 1), ("p5b", 5)] {
            self.add(name, JobOptions::new().priority(p)).await;
        }
        for (name, ms) in [("d1", 3_600_000), ("d2", 7_200_000)] {
            self.add(name, JobOptions::new().delay(Duration::from_millis(ms)))
                .await;
        }
        for (i, ok) in [true, true, false, true, false].into_iter().enumerate() {
            let token = format!("t{i}");
            let job = self.take(&token).await;
            // Finish in different minutes, so metrics hold several data points.
            self.clock.advance(Duration::from_secs(61));
            if ok {
                self.complete(&job, &token, &format!("{{\"i\":{i}}}")).await;
            } else {
                self.fail(&job, &token, "boom").await;
            }
        }
        self.take("busy").await;
        let mut con = support::redis().await;
        let logs = format!("{}:{}:1:logs", self.rq.prefix, self.rq.name);
        let _: () = redis::cmd("RPUSH")
            .arg(&logs)
            .arg(&["l0", "l1", "l2", "l3", "l4"][..])
            .query_async(&mut con)
            .await
            .expect("RPUSH");
    }
}

/// One `queue-op.mjs` call for [`Ctx::node_batch`].
fn call(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| (*p).to_owned()).collect()
}

fn types(names: &[&str]) -> Vec<JobType> {
    names
        .iter()
        .map(|n| n.parse().expect("a job type"))
        .collect()
}

fn ids(jobs: &[Job]) -> Vec<String> {
    jobs.iter().map(|j| j.id.to_string()).collect()
}

#[tokio::test]
async fn prometheus_text_is_nodes_with_and_without_labels() {
    let ctx = Ctx::new("prom \"q\"").await;
    ctx.populate().await;

    let plain = ctx.rq.queue.export_prometheus_metrics(&[]).await.unwrap();
    assert_eq!(Value::String(plain.clone()), ctx.node("prometheus", &[]));
    assert!(plain.contains(r#"state="waiting"} 2"#), "{plain}");
    assert!(plain.contains("bullmq_job_completed_total{queue=\"prom \\\"q\\\"\"} 3"));
    assert!(plain.contains("bullmq_job_failed_total{queue=\"prom \\\"q\\\"\"} 2"));

    let labels = [("env", "prod"), ("note", "a\"b\\c\nd")];
    let labelled = ctx
        .rq
        .queue
        .export_prometheus_metrics(&labels)
        .await
        .unwrap();
    let node_labels = json!({"env": "prod", "note": "a\"b\\c\nd"}).to_string();
    assert_eq!(
        Value::String(labelled.clone()),
        ctx.node("prometheus", &[&node_labels])
    );
    assert!(
        labelled.contains(r#", env="prod", note="a\"b\\c\nd"}"#),
        "{labelled}"
    );
}

#[tokio::test]
async fn metrics_are_nodes() {
    let ctx = Ctx::new("metrics").await;
    ctx.populate().await;
    for (kind, state) in [
        (bullmq::job::FinishedState::Completed, "completed"),
        (bullmq::job::FinishedState::Failed, "failed"),
    ] {
        let ranges = [(0, -1), (0, 1), (1, 3), (2, 2)];
        let calls: Vec<Vec<String>> = ranges
            .iter()
            .map(|(s, e)| call(&["getMetrics", state, &s.to_string(), &e.to_string()]))
            .collect();
        let node = ctx.node_batch(&calls);
        for ((start, end), node) in ranges.into_iter().zip(node) {
            let m = ctx.rq.queue.get_metrics(kind, start, end).await.unwrap();
            let ours = json!({
                "meta": {"count": m.total, "prevTS": m.prev_ts, "prevCount": m.prev_count},
                "data": m.data,
                "count": m.count,
            });
            assert_eq!(ours, node, "{state} {start}..={end}");
        }
    }
    let all = ctx
        .rq
        .queue
        .get_metrics(bullmq::job::FinishedState::Completed, 0, -1)
        .await
        .unwrap();
    assert_eq!(all.total, 3);
    assert!(all.count >= 2, "several minutes: {all:?}");
}

#[tokio::test]
async fn counts_are_nodes() {
    let ctx = Ctx::new("counts").await;
    ctx.populate().await;

    let pairs = |counts: Vec<(JobType, u64)>| -> Value {
        counts
            .into_iter()
            .map(|(t, n)| json!([t.as_str(), n]))
            .collect()
    };
    let mut checks = Vec::new();
    let all = ctx.rq.queue.get_job_counts(&[]).await.unwrap();
    checks.push(("all".to_owned(), pairs(all), call(&["jobCounts"])));

    let asked = [
        "completed",
        "wait",
        "waiting",
        "delayed",
        "completed",
        "prioritized",
    ];
    let some = ctx.rq.queue.get_job_counts(&types(&asked)).await.unwrap();
    let mut asking = call(&["jobCounts"]);
    asking.extend(call(&asked));
    checks.push(("asked".to_owned(), pairs(some), asking));

    for set in [
        &["completed", "failed"][..],
        &["wait"],
        &["active", "delayed"],
    ] {
        let ours = ctx
            .rq
            .queue
            .get_job_count_by_types(&types(set))
            .await
            .unwrap();
        let mut asking = call(&["jobCountByTypes"]);
        asking.extend(call(set));
        checks.push((format!("{set:?}"), json!(ours), asking));
    }
    let count = ctx.rq.queue.count().await.unwrap();
    checks.push(("count".to_owned(), json!(count), call(&["count"])));
    ctx.assert_node(checks);
    assert_eq!(count, 2 + 3 + 2);

    // Node.js returns an object, whose integer-like keys JavaScript orders numerically; we keep
    // the order asked, so compare as sets.
    let priorities = [5, 0, 1, 5, 9];
    let mut ours: Vec<(String, u64)> = ctx
        .rq
        .queue
        .get_counts_per_priority(&priorities)
        .await
        .unwrap()
        .into_iter()
        .map(|(p, n)| (p.to_string(), n))
        .collect();
    ours.sort();
    let node = ctx.node("countsPerPriority", &["5", "0", "1", "5", "9"]);
    let mut node: Vec<(String, u64)> = serde_json::from_value(node).unwrap();
    node.sort();
    assert_eq!(ours, node);
    assert_eq!(
        ours,
        [
            ("0".to_owned(), 2),
            ("1".to_owned(), 1),
            ("5".to_owned(), 2),
            ("9".to_owned(), 0)
        ]
    );
}

#[tokio::test]
async fn ranges_and_jobs_are_ordered_as_nodes() {
    let ctx = Ctx::new("ranges").await;
    ctx.populate().await;
    let sets: [&[&str]; 5] = [
        &["waiting", "prioritized", "delayed", "completed"],
        &["completed", "wait", "failed"],
        &["active", "delayed"],
        &["prioritized", "waiting"],
        &[],
    ];
    let mut checks = Vec::new();
    for set in sets {
        let ts = types(set);
        let names = json!(set).to_string();
        for (start, end) in [(0, -1), (0, 0), (0, 1), (1, 2), (5, 9), (-2, -1)] {
            for asc in [true, false] {
                let range = Range { start, end, asc };
                let dir = if asc { "asc" } else { "desc" };
                let (s, e) = (start.to_string(), end.to_string());
                let jobs = ids(&ctx.rq.queue.get_jobs(&ts, range).await.unwrap());
                let label = format!("{set:?} {start}..={end} {dir}");
                checks.push((
                    format!("getJobs {label}"),
                    json!(jobs),
                    call(&["getJobs", &names, &s, &e, dir]),
                ));
                if ts.is_empty() {
                    continue;
                }
                let ranges: Vec<String> = ctx
                    .backend()
                    .get_ranges(&ts, range)
                    .await
                    .unwrap()
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                checks.push((
                    format!("getRanges {label}"),
                    json!(ranges),
                    call(&["getRanges", &names, &s, &e, dir]),
                ));
            }
        }
    }
    ctx.assert_node(checks);
}

#[tokio::test]
async fn pages_of_jobs_refill_past_removed_jobs_as_nodes() {
    let ctx = Ctx::new("refill").await;
    ctx.populate().await;
    // Waiting: h (8) then g (7), newest first; prioritized p1 (10) first. Remove the heads'
    // hashes, as a removal racing with the read would.
    let mut con = support::redis().await;
    for id in ["8", "10"] {
        let _: () = redis::cmd("DEL")
            .arg(format!("{}:refill:{id}", ctx.rq.prefix))
            .query_async(&mut con)
            .await
            .expect("DEL");
    }
    let sets: [&[&str]; 3] = [
        &["waiting"],
        &["prioritized", "waiting"],
        &["waiting", "completed"],
    ];
    let mut checks = Vec::new();
    for set in sets {
        let names = json!(set).to_string();
        for (start, end) in [(0, 0), (0, 1), (1, 1), (0, -1), (-1, -1), (3, 1)] {
            for asc in [true, false] {
                let range = Range { start, end, asc };
                let dir = if asc { "asc" } else { "desc" };
                let (s, e) = (start.to_string(), end.to_string());
                let jobs = ids(&ctx.rq.queue.get_jobs(&types(set), range).await.unwrap());
                checks.push((
                    format!("getJobs {set:?} {start}..={end} {dir}"),
                    json!(jobs),
                    call(&["getJobs", &names, &s, &e, dir]),
                ));
            }
        }
    }
    ctx.assert_node(checks);
    let first = Range {
        start: 0,
        end: 0,
        asc: false,
    };
    let waiting = ctx
        .rq
        .queue
        .get_jobs(&types(&["waiting"]), first)
        .await
        .unwrap();
    assert_eq!(ids(&waiting), ["7"], "refilled past the removed job");
}

#[tokio::test]
async fn job_logs_are_nodes() {
    let ctx = Ctx::new("logs").await;
    ctx.populate().await;
    let id = JobId::from("1");
    let mut checks = Vec::new();
    for (start, end) in [(0, -1), (0, 0), (1, 2), (3, 10), (2, 1)] {
        for asc in [true, false] {
            let dir = if asc { "asc" } else { "desc" };
            let logs = ctx
                .rq
                .queue
                .get_job_logs(&id, Range { start, end, asc })
                .await
                .unwrap();
            let ours = json!({"logs": logs.logs, "count": logs.count});
            let (s, e) = (start.to_string(), end.to_string());
            checks.push((
                format!("{start}..={end} {dir}"),
                ours,
                call(&["getJobLogs", "1", &s, &e, dir]),
            ));
        }
    }
    ctx.assert_node(checks);
    let newest = ctx
        .rq
        .queue
        .get_job_logs(
            &id,
            Range {
                start: 0,
                end: 1,
                asc: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(newest.logs, ["l4", "l3"]);
}

/// A named Node.js worker that says `ready` once connected, then waits for a line on stdin.
const NODE_WORKER: &str = r"
const { Worker } = require('bullmq');
const IORedis = require('ioredis');
const [url, prefix, queueName] = process.argv.slice(1);
(async () => {
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const worker = new Worker(queueName, null, { connection, prefix, name: 'node-w', autorun: false });
  await worker.waitUntilReady();
  console.log('ready');
  process.stdin.once('data', async () => {
    await worker.close(); connection.disconnect(); process.exit(0);
  });
})().catch(e => { console.error(e); process.exit(1); });
";

#[tokio::test(flavor = "multi_thread")]
async fn workers_are_seen_across_runtimes() {
    let ctx = Ctx::new("workers").await;
    let base = ctx.backend().client_name(&ClientRole::Queue);
    let mut node = support::NodeChild::spawn(NODE_WORKER, &[&ctx.rq.prefix, ctx.rq.name.as_str()]);
    assert_eq!(node.line("starts").await, "ready");

    let names = |workers: Vec<bullmq::backend::ClientInfo>| -> Vec<String> {
        let mut names: Vec<String> = workers.into_iter().map(|c| c.name).collect();
        names.sort();
        names
    };
    let node_worker = format!("{base}:w:node-w");
    let ours = names(ctx.rq.queue.get_workers().await.unwrap());
    assert_eq!(
        ours,
        std::slice::from_ref(&node_worker),
        "only the Node.js worker"
    );
    assert_eq!(json!(ours), ctx.node("getWorkers", &[]));
    assert_eq!(
        json!(ctx.rq.queue.get_workers_count().await.unwrap()),
        ctx.node("getWorkersCount", &[])
    );

    // A Rust worker: the blocking connection carries the worker's name once opened.
    let rust = ctx.rq.connect().await;
    rust.set_client_role(ClientRole::Worker {
        name: Some("rust-w".to_owned()),
    })
    .await
    .unwrap();
    rust.wait_for_job(Duration::ZERO).await.unwrap();
    let seen_by_node = ctx.node("getWorkers", &[]);
    let rust_worker = format!("{base}:w:rust-w");
    let seen: Vec<String> = serde_json::from_value(seen_by_node.clone()).unwrap();
    assert_eq!(seen, [node_worker, rust_worker]);
    assert_eq!(
        json!(names(ctx.rq.queue.get_workers().await.unwrap())),
        seen_by_node
    );

    node.finish().await;
    rust.close(true).await.unwrap();
}

/// Node.js' page (`items`, `total`, `jobs` as `[name, data]`), from ours.
fn page_json(page: &bullmq::backend::Page, parse_values: bool) -> Value {
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|(id, v)| match v {
            Some(v) if parse_values => {
                json!({"id": id, "v": serde_json::from_str::<Value>(v).unwrap()})
            }
            Some(v) => json!({"id": id, "v": v}),
            None => json!({"id": id}),
        })
        .collect();
    let jobs: Vec<Value> = page.jobs.iter().map(|j| json!([j.name, j.data])).collect();
    json!({"items": items, "total": page.total, "jobs": jobs})
}

fn without_cursor(mut node: Value) -> Value {
    node.as_object_mut().unwrap().remove("cursor");
    node
}

#[tokio::test]
async fn queue_dependencies_are_nodes() {
    let ctx = Ctx::new("flow").await;
    let p = Prefix::new(&ctx.rq.prefix).unwrap();
    let parent_key = format!("{}:flow:p1", ctx.rq.prefix);
    let node_of = |job: Job, parent: ParentKeyOpts| FlowNode {
        entry: NewJob { job, parent },
        queue: QueueName::new("flow").unwrap(),
        prefix: p.clone(),
    };
    let mut nodes = vec![node_of(
        Job::new(
            "report",
            "{}".into(),
            JobOptions::new().job_id("p1").with_node_defaults(),
            T0,
        ),
        ParentKeyOpts {
            add_to_waiting_children: true,
            ..ParentKeyOpts::default()
        },
    )];
    for i in 1..=6 {
        let opts = JobOptions::new()
            .job_id(format!("c{i}"))
            .parent(ParentOptions::new("p1", format!("{}:flow", ctx.rq.prefix)))
            .ignore_dependency_on_failure(i == 3 || i == 4)
            .with_node_defaults();
        let job = Job::new("part", format!("{{\"i\":{i}}}"), opts, T0);
        nodes.push(node_of(
            job,
            ParentKeyOpts {
                parent_key: Some(parent_key.clone()),
                parent_dependencies_key: Some(format!("{parent_key}:dependencies")),
                ..ParentKeyOpts::default()
            },
        ));
    }
    ctx.backend().add_flow(&nodes).await.expect("add_flow");
    // c1 and c2 complete, c3 and c4 fail and are ignored; c5 and c6 stay pending.
    for i in 1..=4 {
        let token = format!("t{i}");
        let job = ctx.take(&token).await;
        assert_eq!(job.id.as_str(), format!("c{i}"));
        if i <= 2 {
            ctx.complete(&job, &token, &format!("{{\"r\":{i}}}")).await;
        } else {
            ctx.fail(&job, &token, &format!("broke {i}")).await;
        }
    }

    let parent = JobId::from("p1");
    // Ours for each page, and the call asking Node.js for the same page.
    let mut pages = Vec::new();
    let windows = [
        (0, None),
        (0, Some(0)),
        (1, Some(1)),
        (0, Some(5)),
        (3, Some(4)),
    ];
    for (start, end) in windows {
        let e = end
            .map_or(-1, |e: u64| i64::try_from(e).unwrap())
            .to_string();
        let s = start.to_string();
        // Node.js' `getDependencies` has no ignored kind: its pager on `<parent>:failed` is
        // what ours reads.
        for (kind, node_call) in [
            (
                DependencyKind::Processed,
                call(&["getDependencies", "p1", "processed", &s, &e]),
            ),
            (
                DependencyKind::Unprocessed,
                call(&["getDependencies", "p1", "pending", &s, &e]),
            ),
            (
                DependencyKind::Ignored,
                call(&["paginate", "p1:failed", &s, &e]),
            ),
        ] {
            let page = ctx
                .rq
                .queue
                .get_dependencies(&parent, kind, start, end)
                .await
                .unwrap();
            pages.push((format!("{kind:?} {s}..={e}"), kind, page, node_call));
        }
    }
    let calls: Vec<Vec<String>> = pages.iter().map(|(_, _, _, c)| c.clone()).collect();
    let answers = ctx.node_batch(&calls);
    for ((label, kind, page, _), node) in pages.iter().zip(answers) {
        match kind {
            DependencyKind::Processed => {
                assert_eq!(page_json(page, true), without_cursor(node), "{label}");
            }
            DependencyKind::Unprocessed => {
                assert_eq!(page_json(page, false), without_cursor(node), "{label}");
            }
            _ => {
                // Node.js reports the reasons, which are not JSON, as parse errors: compare
                // the keys, the total and the jobs.
                let node_ids: Vec<Value> = node["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|i| i["id"].clone())
                    .collect();
                let ours: Vec<Value> = page.items.iter().map(|(id, _)| json!(id)).collect();
                assert_eq!(node_ids, ours, "{label}");
                assert_eq!(json!(page.total), node["total"], "{label}");
                assert_eq!(page_json(page, false)["jobs"], node["jobs"], "{label}");
            }
        }
    }

    let all = |kind| ctx.rq.queue.get_dependencies(&parent, kind, 0, None);
    let processed = all(DependencyKind::Processed).await.unwrap();
    let mut values: Vec<(String, Option<String>)> = processed.items;
    values.sort();
    assert_eq!(
        values,
        [
            (
                format!("{}:flow:c1", ctx.rq.prefix),
                Some(r#"{"r":1}"#.to_owned())
            ),
            (
                format!("{}:flow:c2", ctx.rq.prefix),
                Some(r#"{"r":2}"#.to_owned())
            ),
        ]
    );
    assert_eq!(all(DependencyKind::Unprocessed).await.unwrap().total, 2);
    let mut reasons: Vec<Option<String>> = all(DependencyKind::Ignored)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        [Some("broke 3".to_owned()), Some("broke 4".to_owned())]
    );
}
