//! Worker faults (docs/RELIABILITY.md R1-R5, R13, R14, I6) with real worker processes and
//! real servers: a worker process killed mid-job, stopped with SIGTERM, frozen past its lock;
//! connections killed and the server restarted mid-run; many workers racing on short locks;
//! all of those at random while jobs keep coming (the chaos soak); malformed jobs written by
//! another runtime. In every case no job is lost, none completes twice, and the workers keep
//! running.
//!
//! The crashing worker is `bullmq-test-worker` (package `bullmq-test-worker`, built by
//! `support::workspace_bin`), so a crash is a real process crash.

#![allow(clippy::unwrap_used)]

use crate::support;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bullmq::redis::RedisBackend;
use bullmq::{
    ActiveJob, CancellationToken, JobId, JobOptions, JobState, ProcessResult, Queue, Worker,
    WorkerOptions,
};
use serde_json::{Value, json};

use crate::support::chaos::{self, ChaosPlan, Producer};
use crate::support::only_completed::assert_only_completed;
use crate::support::redis_queue::RedisQueue;
use crate::support::soak::{explained_reruns, next_random, soak_settings};
use crate::support::stalled::run_until_stalled;
use crate::support::wait::eventually;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

const LOCK: Duration = Duration::from_millis(800);
const STALLED: Duration = Duration::from_millis(100);

/// A queue under a unique prefix on the shared server or on a private one.
type Ctx = RedisQueue;

/// On the shared server (its keys removed on drop).
async fn shared_ctx(queue: &str) -> Ctx {
    // Built (or found fresh) before any test starts its clock.
    test_worker();
    RedisQueue::shared(queue).await
}

/// On a private server (thrown away with it).
async fn private_ctx(server: &support::PrivateRedis, queue: &str) -> Ctx {
    test_worker();
    RedisQueue::on(server.url(), queue).await
}

/// What the fault tests do on their queue besides [`RedisQueue`]'s own moves.
trait FaultCtx {
    /// Adds a job with the default options; its id.
    async fn add(&self, name: &str, data: Value) -> JobId;
    /// The key of the queue's `suffix`.
    fn key(&self, suffix: &str) -> String;
    /// A plain connection to the server.
    async fn raw(&self) -> redis::aio::MultiplexedConnection;
    /// The ids of a finished set (`completed` or `failed`).
    async fn finished(&self, set: &str) -> Vec<String>;
    /// How many events named `event` the queue's stream holds for each job id.
    async fn event_counts(&self, event: &str) -> HashMap<String, usize>;
    /// The bullmq-test-worker process on this queue, with `env` on top of its defaults.
    fn spawn_worker(&self, env: &[(&str, &str)]) -> WorkerProcess;
}

impl FaultCtx for RedisQueue {
    async fn add(&self, name: &str, data: Value) -> JobId {
        self.queue
            .add(name, &data, JobOptions::new())
            .await
            .unwrap()
            .id
    }

    fn key(&self, suffix: &str) -> String {
        format!("{}:{}:{suffix}", self.prefix, self.name.as_str())
    }

    async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    async fn finished(&self, set: &str) -> Vec<String> {
        redis::cmd("ZRANGE")
            .arg(self.key(set))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.raw().await)
            .await
            .unwrap()
    }

    async fn event_counts(&self, event: &str) -> HashMap<String, usize> {
        let mut con = self.raw().await;
        let mut counts = HashMap::new();
        // Read in pages: a long soak's stream is too large for one reply within the
        // connection's response timeout.
        let mut from = "-".to_owned();
        loop {
            let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
                .arg(self.key("events"))
                .arg(&from)
                .arg("+")
                .arg("COUNT")
                .arg(2_000)
                .query_async(&mut con)
                .await
                .unwrap();
            let Some((last, _)) = entries.last() else {
                return counts;
            };
            from = format!("({last}");
            for (_, fields) in &entries {
                let field = |name: &str| {
                    fields
                        .chunks(2)
                        .find(|kv| kv[0] == name)
                        .map(|kv| kv[1].clone())
                };
                if field("event").as_deref() == Some(event)
                    && let Some(id) = field("jobId")
                {
                    *counts.entry(id).or_insert(0) += 1;
                }
            }
        }
    }

    fn spawn_worker(&self, env: &[(&str, &str)]) -> WorkerProcess {
        let mut cmd = Command::new(test_worker());
        cmd.env("REDIS_URL", &self.url)
            .env("PREFIX", &self.prefix)
            .env("QUEUE", self.name.as_str())
            .env("LOCK_MS", LOCK.as_millis().to_string())
            .env("STALLED_MS", STALLED.as_millis().to_string())
            .stdout(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        WorkerProcess::spawn(cmd)
    }
}

/// The worker binary, built once per test process.
pub(crate) fn test_worker() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(support::workspace_bin::test_worker)
}

/// A worker process and the lines it prints.
pub(crate) struct WorkerProcess {
    pub(crate) child: Child,
    lines: UnboundedReceiver<(Instant, String)>,
    seen: Vec<String>,
    /// When each line of `seen` was read.
    seen_at: Vec<Instant>,
}

impl WorkerProcess {
    pub(crate) fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd.spawn().expect("start bullmq-test-worker");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
            seen_at: Vec::new(),
        }
    }

    fn push(&mut self, (at, line): (Instant, String)) {
        self.seen.push(line);
        self.seen_at.push(at);
    }

    /// Waits (10 s at most) for a line `matches` accepts, and returns it.
    async fn expect(&mut self, what: &str, matches: impl Fn(&str) -> bool) -> String {
        if let Some(line) = self.seen.iter().find(|l| matches(l)) {
            return line.clone();
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match tokio::time::timeout_at(deadline, self.lines.recv()).await {
                Ok(Some((at, line))) => {
                    self.push((at, line.clone()));
                    if matches(&line) {
                        return line;
                    }
                }
                Ok(None) | Err(_) => panic!(
                    "worker process never printed {what}; it printed {:?}",
                    self.seen
                ),
            }
        }
    }

    pub(crate) async fn expect_line(&mut self, line: &str) {
        self.expect(line, |l| l == line).await;
    }

    /// Everything printed so far.
    fn drain(&mut self) -> &[String] {
        while let Ok(timed) = self.lines.try_recv() {
            self.push(timed);
        }
        &self.seen
    }

    /// Everything printed so far, with when it was read.
    pub(crate) fn drain_timed(&mut self) -> impl Iterator<Item = (Instant, &str)> {
        self.drain();
        self.seen_at
            .iter()
            .copied()
            .zip(self.seen.iter().map(String::as_str))
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// SIGKILL, and reap it.
    pub(crate) fn crash(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Waits for the process to exit by itself.
    async fn exit_status(&mut self) -> std::process::ExitStatus {
        let child = std::sync::Mutex::new(&mut self.child);
        eventually(
            "the worker process exits",
            Duration::from_secs(10),
            || async { child.lock().unwrap().try_wait().unwrap().is_some() },
        )
        .await;
        // Once reaped, `try_wait` keeps answering with the same status.
        let status = child.lock().unwrap().try_wait().unwrap();
        status.expect("exited")
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        // It may be frozen: let it run so that SIGKILL is not queued behind SIGSTOP.
        let _ = Command::new("kill")
            .arg("-CONT")
            .arg(self.child.id().to_string())
            // Gone already when it was crashed (and reaped) on purpose.
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long a test waits for a worker's event.
const EVENT_WAIT: Duration = Duration::from_secs(10);

/// Options of the in-process workers that take over: the same short lock and fast check.
fn rescuer() -> WorkerOptions {
    WorkerOptions::new()
        .name("rescuer")
        .lock_duration(LOCK)
        .stalled_interval(STALLED)
        .drain_delay(Duration::from_millis(500))
        .autorun(false)
}

async fn rescued(_job: ActiveJob<RedisBackend>, _cancel: CancellationToken) -> ProcessResult {
    Ok(json!({"by": "rescuer"}))
}

/// Runs an in-process rescuer until its stalled check has put `id` back and it has completed
/// the job; returns when the job was seen completed (the rescuer closed after that).
async fn rescue(ctx: &Ctx, id: &JobId) -> Instant {
    let worker = ctx.worker(rescuer(), rescued).await;
    run_until_stalled(&worker, id, EVENT_WAIT).await;
    ctx.wait_state(id, JobState::Completed).await;
    let completed = Instant::now();
    worker.close().await;
    completed
}

// R1 -------------------------------------------------------------------------------------------

#[tokio::test]
async fn r1_a_killed_worker_process_job_is_finished_by_another_through_stalled_recovery() {
    let ctx = shared_ctx("r1").await;
    let id = ctx.add("slow", json!({"ms": 30_000})).await;
    let mut crashed = ctx.spawn_worker(&[("NAME", "doomed")]);
    crashed.expect_line(&format!("active {id}")).await;
    crashed.crash();
    let killed_at = Instant::now();

    let recovered_in = rescue(&ctx, &id).await - killed_at;
    let job = ctx.job(&id).await;
    assert_eq!(job.stalled_counter, 1);
    assert_eq!(job.attempts_started, 2);
    assert_eq!(job.attempts_made, 1, "a stall is not a failed attempt");
    assert_eq!(job.return_value.as_deref(), Some(r#"{"by":"rescuer"}"#));
    assert_eq!(job.processed_by.as_deref(), Some("rescuer"));
    assert!(
        recovered_in < LOCK + Duration::from_secs(3),
        "took over after about lockDuration + stalledInterval, not {recovered_in:?}"
    );
    assert_eq!(ctx.event_counts("stalled").await.get(id.as_str()), Some(&1));
    assert_eq!(
        ctx.event_counts("completed").await.get(id.as_str()),
        Some(&1)
    );
}

#[tokio::test]
async fn r1_a_job_whose_workers_keep_crashing_fails_past_max_stalled_count() {
    let ctx = shared_ctx("r1-limit").await;
    let id = ctx.add("cursed", json!({"ms": 30_000})).await;
    // maxStalledCount 1 (the default): the first stall puts it back, the second fails it.
    let started = Instant::now();
    for crash in 0..2 {
        let mut process = ctx.spawn_worker(&[("NAME", &format!("doomed-{crash}"))]);
        process.expect_line(&format!("active {id}")).await;
        process.crash();
    }
    let mut last = ctx.spawn_worker(&[("NAME", "survivor")]);
    last.expect_line("ready").await;
    ctx.wait_state(&id, JobState::Failed).await;
    let job = ctx.job(&id).await;
    assert_eq!(
        job.failed_reason.as_deref(),
        Some("job stalled more than allowable limit")
    );
    // 6.7.6 marks it (`defa`) and puts it back; the next worker to take it fails it without
    // running the processor (a 30 s job could not have failed this soon otherwise).
    assert_eq!(job.attempts_started, 3);
    last.expect_line(&format!(
        "failed {id} job stalled more than allowable limit"
    ))
    .await;
    assert_eq!(ctx.event_counts("failed").await.get(id.as_str()), Some(&1));
    assert!(started.elapsed() < Duration::from_secs(15));
}

// R2 -------------------------------------------------------------------------------------------

#[tokio::test]
async fn r2_sigterm_lets_jobs_in_flight_finish_and_takes_no_new_one() {
    let ctx = shared_ctx("r2").await;
    let mut ids = Vec::new();
    for i in 0..4 {
        // Long enough that SIGTERM lands while both run, even on a loaded machine.
        ids.push(ctx.add("j", json!({"i": i, "ms": 2500})).await);
    }
    let mut process = ctx.spawn_worker(&[("CONCURRENCY", "2"), ("CLOSE_MS", "5000")]);
    process.expect_line(&format!("active {}", ids[0])).await;
    process.expect_line(&format!("active {}", ids[1])).await;
    process.signal("TERM");
    process.expect_line("closed true").await;
    assert!(process.exit_status().await.success());
    for id in &ids[..2] {
        assert_eq!(ctx.state(id).await, Some(JobState::Completed));
    }
    for id in &ids[2..] {
        assert_eq!(
            ctx.state(id).await,
            Some(JobState::Waiting),
            "never fetched"
        );
        assert_eq!(ctx.job(id).await.attempts_started, 0);
    }
    let lines = process.drain();
    assert!(
        !lines
            .iter()
            .any(|l| l == &format!("active {}", ids[2]) || l == &format!("active {}", ids[3])),
        "{lines:?}"
    );
}

#[tokio::test]
async fn r2_sigterm_past_its_timeout_leaves_jobs_to_stalled_recovery() {
    let ctx = shared_ctx("r2-timeout").await;
    let a = ctx.add("long", json!({"ms": 20_000})).await;
    let b = ctx.add("long", json!({"ms": 20_000})).await;
    let mut process = ctx.spawn_worker(&[("CONCURRENCY", "2"), ("CLOSE_MS", "200")]);
    process.expect_line(&format!("active {a}")).await;
    process.expect_line(&format!("active {b}")).await;
    process.signal("TERM");
    process.expect_line("closed false").await;
    assert!(process.exit_status().await.success());
    for id in [&a, &b] {
        assert_eq!(
            ctx.state(id).await,
            Some(JobState::Active),
            "a job cut short is neither finished nor failed: {:?}",
            process.drain()
        );
    }
    let worker = ctx.worker(rescuer().concurrency(2), rescued).await;
    worker.run().unwrap();
    for id in [&a, &b] {
        ctx.wait_state(id, JobState::Completed).await;
        let job = ctx.job(id).await;
        assert_eq!(job.return_value.as_deref(), Some(r#"{"by":"rescuer"}"#));
        assert_eq!(job.stalled_counter, 1);
    }
    worker.close().await;
}

// R3 -------------------------------------------------------------------------------------------

#[tokio::test]
async fn r3_a_frozen_worker_loses_its_job_and_its_late_finish_is_refused() {
    let ctx = shared_ctx("r3").await;
    let id = ctx.add("slow", json!({"ms": 2_000})).await;
    let mut frozen = ctx.spawn_worker(&[("NAME", "frozen")]);
    frozen.expect_line(&format!("active {id}")).await;
    frozen.signal("STOP");

    rescue(&ctx, &id).await;

    frozen.signal("CONT");
    // Whichever comes first once it wakes: its lock renewal finds the lock lost (one `lost`
    // line, and the processor's outcome is dropped unsent), or the processor's return reaches
    // the store, which refuses the finish.
    let lost = format!("lost {id}");
    let late = frozen
        .expect("the lost lock or the refused finish", |l| {
            l == lost || l.starts_with("error script moveToFinished")
        })
        .await;
    if late != lost {
        assert!(
            late.ends_with("LockNotFound") || late.ends_with("LockMismatch"),
            "{late}"
        );
    }
    let job = ctx.job(&id).await;
    assert_eq!(job.return_value.as_deref(), Some(r#"{"by":"rescuer"}"#));
    assert_eq!(ctx.finished("completed").await, vec![id.to_string()]);
    assert_eq!(
        ctx.event_counts("completed").await.get(id.as_str()),
        Some(&1)
    );
    assert_eq!(ctx.state(&id).await, Some(JobState::Completed));

    // The worker that lost the job goes on with the next one.
    let next = ctx.add("next", json!({"ms": 0})).await;
    frozen.expect_line(&format!("completed {next}")).await;
}

// R4 -------------------------------------------------------------------------------------------

/// Counts processor runs per job.
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<HashMap<String, usize>>>);

impl Runs {
    fn record(&self, id: &JobId) {
        *self.0.lock().unwrap().entry(id.to_string()).or_insert(0) += 1;
    }

    fn total(&self) -> usize {
        self.0.lock().unwrap().values().sum()
    }
}

/// A worker that counts each run in `runs`, works for `ms(job)` milliseconds and returns the
/// job's id.
async fn counting_worker(
    ctx: &Ctx,
    opts: WorkerOptions,
    runs: &Runs,
    ms: fn(&ActiveJob<RedisBackend>) -> u64,
) -> Worker<RedisBackend, impl bullmq::Processor<RedisBackend>> {
    let runs = runs.clone();
    ctx.worker(opts, move |job, _| {
        let runs = runs.clone();
        async move {
            runs.record(&job.id);
            // Fixed wait: simulates work (a job that takes this long).
            tokio::time::sleep(Duration::from_millis(ms(&job))).await;
            Ok(json!(job.id.to_string()))
        }
    })
    .await
}

async fn add_many(ctx: &Ctx, n: usize, data: impl Fn(usize) -> Value) -> Vec<String> {
    let jobs: Vec<_> = (0..n)
        .map(|i| bullmq::BulkJob {
            name: "n".to_owned(),
            data: data(i),
            opts: JobOptions::new(),
        })
        .collect();
    let added = ctx.queue.add_bulk(jobs).await.unwrap();
    added.into_iter().map(|j| j.id.to_string()).collect()
}

/// Every id ended exactly once, in completed or failed, with exactly one final event; nothing
/// is left waiting or active.
async fn assert_each_finished_once(ctx: &Ctx, ids: &[String]) {
    let completed = ctx.finished("completed").await;
    let failed = ctx.finished("failed").await;
    let mut ended: Vec<_> = completed.iter().chain(&failed).cloned().collect();
    ended.sort();
    let mut expected = ids.to_vec();
    expected.sort();
    assert_eq!(ended, expected, "each job ends in exactly one finished set");
    let done = ctx.event_counts("completed").await;
    let fail = ctx.event_counts("failed").await;
    for id in ids {
        let finals = done.get(id).copied().unwrap_or(0) + fail.get(id).copied().unwrap_or(0);
        assert_eq!(finals, 1, "job {id} has {finals} final events");
    }
    let mut con = ctx.raw().await;
    let (wait, active, delayed): (u64, u64, u64) = redis::pipe()
        .cmd("LLEN")
        .arg(ctx.key("wait"))
        .cmd("LLEN")
        .arg(ctx.key("active"))
        .cmd("ZCARD")
        .arg(ctx.key("delayed"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!((wait, active, delayed), (0, 0, 0), "nothing left behind");
}

#[tokio::test]
async fn r4_client_kill_mid_run_loses_and_doubles_nothing() {
    const N: usize = 400;
    let server = support::PrivateRedis::start();
    let ctx = private_ctx(&server, "r4").await;
    let runs = Runs::default();
    let mut workers = Vec::new();
    for w in 0..2 {
        // A kill can land between a fetch's effect and its reply: that job is then locked by
        // a worker that never heard of it, and only the stalled check gives it back, once its
        // lock runs out. Short locks keep that recovery within the test's wait.
        let opts = WorkerOptions::new()
            .name(format!("w{w}"))
            .concurrency(4)
            .lock_duration(Duration::from_secs(2))
            .stalled_interval(Duration::from_secs(1))
            .drain_delay(Duration::from_millis(500));
        workers.push(counting_worker(&ctx, opts, &runs, |_| 5).await);
    }
    let ids = add_many(&ctx, N, |i| json!({"i": i})).await;
    let mut kills = 0;
    for _ in 0..6 {
        // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
        tokio::time::sleep(Duration::from_millis(300)).await;
        kills += server.kill_clients().await;
    }
    assert!(kills >= 6, "connections were killed ({kills})");
    eventually("all jobs finished", Duration::from_secs(20), || async {
        ctx.finished("completed").await.len() >= N
    })
    .await;
    assert_each_finished_once(&ctx, &ids).await;

    // Idle workers blocked on the marker: their blocking connections die, then a job arrives.
    // Fixed wait: lets the idle workers' blocking connections sit in the marker wait, which a
    // dropped connection must break out of (not a condition the test can see from outside).
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(server.kill_clients().await >= 2);
    let started = Instant::now();
    let late = ctx.add("late", json!({})).await;
    ctx.wait_state(&late, JobState::Completed).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the blocking fetch resumed in {:?}",
        started.elapsed()
    );
    for w in &workers {
        assert!(w.is_running());
    }
    eprintln!(
        "r4: {kills} connections killed, {} runs for {} jobs",
        runs.total(),
        N + 1
    );
    for w in workers {
        w.close().await;
    }
}

// R5 -------------------------------------------------------------------------------------------

#[tokio::test]
async fn r5_workers_resume_by_themselves_after_a_server_restart() {
    let mut server = support::PrivateRedis::start();
    let ctx = private_ctx(&server, "r5").await;
    let opts = WorkerOptions::new()
        .name("survivor")
        .drain_delay(Duration::from_millis(500))
        .run_retry_delay(Duration::from_millis(200));
    let worker = ctx
        .worker(opts, |job, _| async move { Ok(json!(job.id.to_string())) })
        .await;
    let before = ctx.add("before", json!({})).await;
    ctx.wait_state(&before, JobState::Completed).await;

    server.kill_server();
    // Longer than drainDelay + 1 s: the blocking wait has failed and retried meanwhile.
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(Duration::from_millis(1_800)).await;
    assert!(worker.is_running(), "still running, retrying on its own");
    server.restart();

    // Persistence is off: the server came back empty. New jobs are taken by the same worker.
    let mut ids = Vec::new();
    for i in 0..5 {
        let added = async {
            loop {
                match ctx
                    .queue
                    .add("after", &json!({"i": i}), JobOptions::new())
                    .await
                {
                    Ok(job) => break job.id,
                    // Retry interval while the restarted server comes back.
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        };
        ids.push(
            tokio::time::timeout(Duration::from_secs(10), added)
                .await
                .expect("the producer reconnects"),
        );
    }
    let started = Instant::now();
    for id in &ids {
        ctx.wait_state(id, JobState::Completed).await;
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(worker.is_running());
    worker.close().await;
    assert!(!worker.is_running());
}

// R13 ------------------------------------------------------------------------------------------

async fn race_on_short_locks(seed: u64) {
    const N: usize = 200;
    let ctx = shared_ctx(&format!("r13-{seed}")).await;
    let mut rng = seed;
    // Each invocation draws its delay from the job's own sequence: a re-run differs.
    let delays: Vec<u64> = (0..N).map(|_| next_random(&mut rng)).collect();
    let ids = add_many(&ctx, N, |i| json!({"i": i, "seed": delays[i]})).await;
    let runs = Runs::default();
    let mut workers = Vec::new();
    for w in 0..4 {
        // Half the workers never renew their locks: their long jobs are taken over while
        // still running, and their finish must then be refused.
        let opts = WorkerOptions::new()
            .name(format!("racer-{w}"))
            .concurrency(5)
            .lock_duration(Duration::from_millis(200))
            .stalled_interval(Duration::from_millis(100))
            .max_stalled_count(2)
            .skip_lock_renewal(w % 2 == 0)
            .drain_delay(Duration::from_millis(300));
        workers.push(
            counting_worker(&ctx, opts, &runs, |job| {
                let data: Value = job.data_as().unwrap_or_default();
                let mut state =
                    data["seed"].as_u64().unwrap_or(1) ^ u64::from(job.attempts_started);
                next_random(&mut state) % 350
            })
            .await,
        );
    }
    eventually("every job finished", Duration::from_secs(25), || async {
        ctx.finished("completed").await.len() + ctx.finished("failed").await.len() >= N
    })
    .await;
    // Let refused late finishes of the non-renewing workers land, if they were to.
    // Fixed wait: gives refused late finishes a chance to land; the check after it must see none.
    tokio::time::sleep(Duration::from_millis(400)).await;
    for w in workers {
        w.close().await;
    }
    assert_each_finished_once(&ctx, &ids).await;
    let invocations = runs.total();
    assert!(invocations >= N);
    eprintln!(
        "r13 seed {seed}: {invocations} invocations for {N} jobs ({} duplicates), {} failed as stalled",
        invocations - N,
        ctx.finished("failed").await.len()
    );
}

#[tokio::test]
async fn r13_each_job_finishes_exactly_once_under_lock_contention() {
    for seed in [0x9E37_79B9_7F4A_7C15, 42] {
        race_on_short_locks(seed).await;
    }
}

// R14 ------------------------------------------------------------------------------------------

/// A fault the chaos soaks (this one and PostgreSQL's) inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Fault {
    /// SIGKILL one worker process, then start a new one in its place.
    KillWorker,
    /// Every client connection cut at the server, the producer's and the workers' alike:
    /// Redis' `CLIENT KILL TYPE normal`, PostgreSQL's `pg_terminate_backend`.
    KillConnections,
    /// Crash the server and start it again; it keeps every acknowledged write (Redis' append-
    /// only file, PostgreSQL's write-ahead log).
    RestartServer,
}

/// Each fault the soaks strike, with its name in the summary.
pub(crate) const FAULTS: [(Fault, &str); 3] = [
    (Fault::KillWorker, "worker kills"),
    (Fault::KillConnections, "connection kills"),
    (Fault::RestartServer, "server restarts"),
];

/// SIGKILLs one of `workers` drawn from `rng` and starts `spawn(i)` in its place; the killed
/// one joins `retired`, whose lines are still read.
pub(crate) fn kill_one(
    workers: &mut [WorkerProcess],
    retired: &mut Vec<WorkerProcess>,
    rng: &mut u64,
    spawn: impl FnOnce(usize) -> WorkerProcess,
) {
    let i = usize::try_from(next_random(rng) % 1024).unwrap() % workers.len();
    workers[i].crash();
    retired.push(std::mem::replace(&mut workers[i], spawn(i)));
}

/// R14: jobs added all along while worker processes are killed, every connection
/// is cut and the server crashes and restarts, then a quiet stretch. Every job whose add
/// returned completes exactly once (one completed event, nothing left waiting or active, the
/// counters agree), every worker still runs, and a job runs again only after a fault: never
/// once the faults are over, and no more often than the faults can explain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r14_chaos_soak_every_job_completes_exactly_once() {
    const WORKERS: usize = 3;
    const CONCURRENCY: usize = 4;
    const LOCK_MS: u64 = 2_000;
    const STALLED_MS: u64 = 500;
    // A job stranded by a fault runs again once its lock has run out and two stalled checks
    // have passed (marked, then moved back), plus slack for a loaded machine.
    const RERUN_WINDOW: Duration = Duration::from_secs(8);
    let (soak, seed) = soak_settings(10);
    eprintln!("r14: seed {seed} (BULLMQ_SOAK_SEED), faults for {soak:?}");
    let mut server = support::PrivateRedis::start_durable();
    let ctx = private_ctx(&server, "r14").await;
    let spawn = |i: usize| {
        let lock = LOCK_MS.to_string();
        let stalled = STALLED_MS.to_string();
        let concurrency = CONCURRENCY.to_string();
        ctx.spawn_worker(&[
            ("NAME", &format!("soak-{i}")),
            ("CONCURRENCY", &concurrency),
            ("LOCK_MS", &lock),
            ("STALLED_MS", &stalled),
            // Stranded jobs are taken back, not failed, however often their worker dies.
            ("MAX_STALLED", "1000"),
            // Back soon after the server restarts (Node's default waits 15 s).
            ("RUN_RETRY_MS", "200"),
        ])
    };
    let mut workers: Vec<WorkerProcess> = (0..WORKERS).map(spawn).collect();
    for w in &mut workers {
        w.expect_line("ready").await;
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The whole event stream is checked at the end: a long run must not have it trimmed.
    let queue = Queue::try_new(ctx.name.clone(), ctx.connect().await)
        .expect("the backend is bound to this queue")
        .max_len_events(1_000_000);
    let producer = Producer {
        ids: "s",
        data: json!({"ms": 20}),
        pace: Duration::from_millis(100),
        retry: Duration::from_millis(50),
    };
    let producing = tokio::spawn(producer.run_one(queue, Arc::clone(&stop)));

    let mut retired = Vec::new();
    let faults = ChaosPlan::new(soak, seed, RERUN_WINDOW)
        .run(&FAULTS, async |fault, rng| match fault {
            Fault::KillWorker => kill_one(&mut workers, &mut retired, rng, spawn),
            Fault::KillConnections => {
                server.kill_clients().await;
            }
            Fault::RestartServer => server.restart(),
        })
        .await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let ids = producing.await.unwrap();
    eventually(
        "every added job completed",
        Duration::from_secs(60),
        || async { ctx.finished("completed").await.len() >= ids.len() },
    )
    .await;

    assert_each_finished_once(&ctx, &ids).await;
    assert!(ctx.finished("failed").await.is_empty());
    assert_only_completed(&ctx.queue, ids.len()).await;
    let mut reports = reports(&mut workers, &mut retired);
    let reruns = explained_reruns(&mut reports.runs, &chaos::started(&faults), RERUN_WINDOW);
    let tally = chaos::tally(&faults, &FAULTS);
    eprintln!("r14: {} jobs, {tally}, {reruns} re-runs", ids.len());
    chaos::assert_bounds(reruns, faults.len(), WORKERS, CONCURRENCY, ids.len(), 100);
}

/// What a soak's worker processes reported, once each is checked to be still running.
#[derive(Default)]
pub(crate) struct Reports {
    /// When each job was seen starting (its `active` lines).
    pub runs: HashMap<String, Vec<Instant>>,
    /// How often each job was reported `completed`.
    pub completed: HashMap<String, usize>,
    /// The `failed` lines.
    pub failed: Vec<String>,
}

/// Reads what `workers` (each checked to be still running) and the `retired` ones printed.
pub(crate) fn reports(workers: &mut [WorkerProcess], retired: &mut [WorkerProcess]) -> Reports {
    for w in workers.iter_mut() {
        assert!(w.child.try_wait().unwrap().is_none(), "a worker exited");
    }
    let mut reports = Reports::default();
    for w in workers.iter_mut().chain(retired) {
        for (at, line) in w.drain_timed() {
            if let Some(id) = line.strip_prefix("active ") {
                reports.runs.entry(id.to_owned()).or_default().push(at);
            } else if let Some(id) = line.strip_prefix("completed ") {
                *reports.completed.entry(id.to_owned()).or_default() += 1;
            } else if line.starts_with("failed ") {
                reports.failed.push(line.to_owned());
            }
        }
    }
    reports
}

// I6 -------------------------------------------------------------------------------------------

/// A malformed job: its name, the fields written over the stored job, and how it must end.
type Corruption<'a> = (&'a str, Vec<(&'a str, String)>, &'a str);

#[tokio::test]
async fn i6_malformed_jobs_from_another_runtime_are_failed_and_the_worker_goes_on() {
    let ctx = shared_ctx("i6").await;
    let mut con = ctx.raw().await;
    // (what is done to the stored job, how it ends). A missing `data` reads as `{}` and
    // numbers as strings are read as numbers, as Node.js reads them; what cannot be read at
    // all is failed with a reason that says so.
    let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
    let cases: Vec<Corruption<'_>> = vec![
        ("no data", vec![], "completed"),
        (
            "data not JSON",
            vec![("data", "{not json".to_owned())],
            "failed",
        ),
        ("opts not JSON", vec![("opts", "][".to_owned())], "failed"),
        (
            "unknown opts keys",
            vec![(
                "opts",
                r#"{"attempts":1,"fromTheFuture":{"x":[1,2]}}"#.to_owned(),
            )],
            "completed",
        ),
        (
            "numbers as strings",
            vec![("opts", r#"{"attempts":"3","delay":"0"}"#.to_owned())],
            "completed",
        ),
        (
            "returnvalue not JSON",
            vec![("returnvalue", "{oops".to_owned())],
            "completed",
        ),
        ("deeply nested data", vec![("data", deep)], "failed"),
    ];
    let mut ids = Vec::new();
    for (what, fields, _) in &cases {
        let id = ctx.add(what, json!({"fine": true})).await;
        let key = ctx.key(id.as_str());
        if *what == "no data" {
            let _: () = redis::cmd("HDEL")
                .arg(&key)
                .arg("data")
                .query_async(&mut con)
                .await
                .unwrap();
        }
        for (field, value) in fields {
            let _: () = redis::cmd("HSET")
                .arg(&key)
                .arg(field)
                .arg(value)
                .query_async(&mut con)
                .await
                .unwrap();
        }
        ids.push(id);
    }
    let good = ctx.add("good", json!({"fine": true})).await;
    let worker = ctx
        .worker(
            WorkerOptions::new().drain_delay(Duration::from_millis(500)),
            |job, _| async move {
                let data: Value = job.data_as()?;
                Ok(json!({ "fine": data["fine"] }))
            },
        )
        .await;
    ctx.wait_state(&good, JobState::Completed).await;
    for ((what, _, expect), id) in cases.iter().zip(&ids) {
        eventually(what, Duration::from_secs(10), || async {
            matches!(
                ctx.state(id).await,
                Some(JobState::Completed | JobState::Failed)
            )
        })
        .await;
        let state = ctx.state(id).await.unwrap();
        let job: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(ctx.key(id.as_str()))
            .query_async(&mut con)
            .await
            .unwrap();
        eprintln!("i6 {what}: {state:?} {:?}", job.get("failedReason"));
        if *expect == "completed" {
            assert_eq!(state, JobState::Completed, "{what}: {job:?}");
        } else {
            assert_eq!(state, JobState::Failed, "{what}: {job:?}");
            let reason = job.get("failedReason").map_or("", String::as_str);
            assert!(reason.contains("could not be decoded"), "{what}: {reason}");
        }
    }
    assert!(worker.is_running());
    let after = ctx.add("after", json!({"fine": true})).await;
    ctx.wait_state(&after, JobState::Completed).await;
    worker.close().await;
}
