//! Fault tests for the PostgreSQL backend (docs/RELIABILITY.md R8, R9, R10 and I7): workers get
//! over lost connections, a crashed server and a read-only primary by themselves, and no job
//! is lost. Every test checks the end state in the tables: each job added is `completed`,
//! with exactly one `completed` event.
//!
//! - R8 runs on the shared test server and terminates only its own sessions: the worker's
//!   pool (named through the URL's `application_name`) and its `LISTEN` connection (named
//!   after the queue).
//! - R9 and R10 run on a private cluster each (`initdb` + `pg_ctl` in a temporary directory,
//!   as the `postgres` user when the tests run as root); the shared cluster is never touched.
//! - I7 checks that queue names full of SQL metacharacters are data, never SQL.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::missing_panics_doc)]

use crate::support::held::fetch_params;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use bullmq::backend::{ClientRole, Lifecycle as _, Transitions as _};
use bullmq::job::JobType;
use bullmq::postgres::sqlx::{self, PgConnection, PgPool};
use bullmq::postgres::{PostgresBackend, PostgresError, PostgresOptions, SchemaName};
use bullmq::{
    ActiveJob, BulkJob, CancellationToken, Error, JobId, JobOptions, JobState, Queue, QueueName,
    Worker, WorkerEvent, WorkerOptions,
};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::support::pg_cluster::Cluster;
use crate::support::postgres::{SchemaGuard, connect, database_url, terminate};
use crate::support::wait::eventually;

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// `url` with `application_name=name` added: every pooled connection then carries the name,
/// which is how this file finds (and kills) its own sessions and no one else's.
pub(crate) fn named_url(url: &str, name: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}application_name={name}")
}

fn unique(tag: &str) -> String {
    let hex = uuid::Uuid::new_v4().simple().to_string();
    format!("{tag}_{}", &hex[..12])
}

/// Panics raised outside the tests (in the library, sqlx or tokio): the worker must report
/// failures as events, never panic on them. A panic in a spawned task would otherwise go
/// unnoticed by the test. Panics of test code (this binary's other modules included) are the
/// tests' own business.
static LIBRARY_PANICS: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn watch_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.location().is_some_and(|l| {
                !l.file().contains("tests/") && !l.file().contains("test-support/")
            }) {
                LIBRARY_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            default(info);
        }));
    });
}

pub(crate) fn assert_no_library_panic() {
    assert_eq!(
        LIBRARY_PANICS.load(Ordering::SeqCst),
        0,
        "code outside the test panicked (see the output above)"
    );
}

/// A connection of the test's own, outside every pool under test.
pub(crate) async fn admin(url: &str) -> Result<PgConnection, sqlx::Error> {
    connect(&named_url(url, "bullmq_faults_admin")).await
}

async fn sessions(admin: &mut PgConnection, application_name: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
        .bind(application_name)
        .fetch_one(admin)
        .await
        .expect("read pg_stat_activity")
}

/// A small pool of the test's own in `schema`, to read the tables with.
pub(crate) async fn check_pool(url: &str, schema: &SchemaName) -> PgPool {
    let options: sqlx::postgres::PgConnectOptions = named_url(url, "bullmq_faults_check")
        .parse()
        .expect("the URL parses");
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options.options([("search_path", schema.quoted())]))
        .await
        .expect("connect the checking pool")
}

/// What a worker reported, gathered from its events.
#[derive(Default)]
struct Reported {
    errors: Vec<Arc<Error>>,
    /// Jobs the stalled check moved back, and when.
    stalled: Vec<(String, Instant)>,
    completed: usize,
}

fn record(mut rx: broadcast::Receiver<WorkerEvent>) -> Arc<Mutex<Reported>> {
    let log = Arc::new(Mutex::new(Reported::default()));
    let out = Arc::clone(&log);
    tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(WorkerEvent::Error(err)) => out.lock().unwrap().errors.push(err),
                Ok(WorkerEvent::Stalled { job_id }) => {
                    out.lock()
                        .unwrap()
                        .stalled
                        .push((job_id.to_string(), Instant::now()));
                }
                Ok(WorkerEvent::Completed { .. }) => out.lock().unwrap().completed += 1,
                Ok(WorkerEvent::Closed) | Err(broadcast::error::RecvError::Closed) => return,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            }
        }
    });
    log
}

/// The SQLSTATE inside a bullmq error, when PostgreSQL answered with one.
fn sqlstate(err: &Error) -> Option<String> {
    match PostgresError::from_error(err)? {
        PostgresError::Query {
            source: sqlx::Error::Database(db),
            ..
        } => db.code().map(std::borrow::Cow::into_owned),
        _ => None,
    }
}

/// How many times the processor ran each job.
type Runs = Arc<Mutex<HashMap<String, u32>>>;

/// A worker whose processor counts its runs and returns `{"id": <job id>}` after `work`.
async fn counting_worker(
    queue: &QueueName,
    backend: PostgresBackend,
    opts: WorkerOptions,
    work: Duration,
) -> (
    Worker<PostgresBackend, impl bullmq::Processor<PostgresBackend>>,
    Runs,
) {
    let runs: Runs = Arc::default();
    let seen = Arc::clone(&runs);
    let worker = Worker::new(
        queue.clone(),
        backend,
        opts,
        move |job: ActiveJob<PostgresBackend>, _cancel: CancellationToken| {
            let seen = Arc::clone(&seen);
            async move {
                *seen.lock().unwrap().entry(job.id.to_string()).or_default() += 1;
                // Fixed wait: simulates work (a job that takes this long).
                tokio::time::sleep(work).await;
                Ok(json!({ "id": job.id.as_str() }))
            }
        },
    )
    .await
    .expect("worker");
    (worker, runs)
}

/// Adds job `id` until the store has it: an add whose outcome is unknown (the connection
/// died around the commit) is simply sent again, and the custom id makes that idempotent.
async fn add_until_stored(queue: &Queue<PostgresBackend>, id: &str, failures: &mut Vec<Error>) {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        match queue
            .add("fault", &json!({ "id": id }), JobOptions::new().job_id(id))
            .await
        {
            Ok(job) => {
                assert_eq!(job.id.as_str(), id);
                return;
            }
            Err(err) => {
                assert!(
                    Instant::now() < deadline,
                    "job {id} could not be added: {err}"
                );
                failures.push(err);
                // Retry interval while the server is down.
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// A background producer adding `j0` … `j<max-1>`, one every `every`; returns the ids it
/// added and the failures it met (each retried until the job was stored).
fn produce(
    queue: Queue<PostgresBackend>,
    max: usize,
    every: Duration,
) -> tokio::task::JoinHandle<(BTreeSet<String>, Vec<Error>)> {
    tokio::spawn(async move {
        let mut ids = BTreeSet::new();
        let mut failures = Vec::new();
        for i in 0..max {
            let id = format!("j{i}");
            add_until_stored(&queue, &id, &mut failures).await;
            ids.insert(id);
            // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
            tokio::time::sleep(every).await;
        }
        (ids, failures)
    })
}

/// Per state, the queue's jobs (read straight from the table).
pub(crate) async fn states(pool: &PgPool, queue: &str) -> BTreeMap<String, i64> {
    sqlx::query_as::<_, (String, i64)>(
        "SELECT state::text, count(*) FROM job WHERE queue = $1 GROUP BY 1",
    )
    .bind(queue)
    .fetch_all(pool)
    .await
    .expect("count jobs by state")
    .into_iter()
    .collect()
}

/// Waits until `expected` jobs are completed; panics with the states otherwise.
async fn wait_completed(pool: &PgPool, queue: &str, expected: usize, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let now = states(pool, queue).await;
        let done = now.get("completed").copied().unwrap_or(0);
        if usize::try_from(done).unwrap() == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{expected} jobs should be completed within {within:?}; by state: {now:?}"
        );
        // Poll interval of a loop that names, when it gives up, what is still pending.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every job of `ids`, and no other, is completed with its return value and exactly one
/// `completed` event; rows never break the state invariants.
async fn assert_completed_once(pool: &PgPool, queue: &str, ids: &BTreeSet<String>) {
    let rows: Vec<(String, String, Option<Value>)> = sqlx::query_as(
        "SELECT id, state::text, return_value FROM job WHERE queue = $1 ORDER BY id",
    )
    .bind(queue)
    .fetch_all(pool)
    .await
    .unwrap();
    let stored: BTreeSet<String> = rows.iter().map(|r| r.0.clone()).collect();
    assert_eq!(&stored, ids, "the jobs stored are the jobs added");
    for (id, state, value) in &rows {
        assert_eq!(state, "completed", "job {id}");
        assert_eq!(value.as_ref(), Some(&json!({ "id": id })), "job {id}");
    }
    let events: Vec<(String, i64)> = sqlx::query_as(
        "SELECT data->>'jobId', count(*) FROM event WHERE queue = $1 AND event = 'completed' \
         GROUP BY 1",
    )
    .bind(queue)
    .fetch_all(pool)
    .await
    .unwrap();
    let events: BTreeMap<String, i64> = events.into_iter().collect();
    for id in ids {
        assert_eq!(
            events.get(id).copied(),
            Some(1),
            "job {id} must complete exactly once"
        );
    }
    assert_eq!(events.len(), ids.len(), "completed events: {events:?}");
    assert_invariants(pool, queue).await;
}

/// No row is half-moved: an active job holds a lock, a finished one has its finish time, a
/// waiting or delayed one holds no lock.
pub(crate) async fn assert_invariants(pool: &PgPool, queue: &str) {
    let broken: Vec<(String, String)> = sqlx::query_as(
        "SELECT id, state::text FROM job WHERE queue = $1 AND ( \
           (state = 'active' AND (lock_token IS NULL OR locked_until_ms IS NULL)) \
           OR (state IN ('completed', 'failed') AND finished_at_ms IS NULL) \
           OR (state = 'completed' AND return_value IS NULL) \
           OR (state IN ('waiting', 'delayed') AND lock_token IS NOT NULL))",
    )
    .bind(queue)
    .fetch_all(pool)
    .await
    .unwrap();
    assert!(broken.is_empty(), "rows in an impossible state: {broken:?}");
}

/// Errors other than the connection's (or the store's refusals after a move whose outcome
/// was lost): what the faults should never produce.
fn unexpected_errors(errors: &[Arc<Error>], also_allowed: &[&str]) -> Vec<String> {
    errors
        .iter()
        .filter(|e| {
            let connection = matches!(
                e.backend_kind(),
                Some(bullmq::BackendErrorKind::Connection | bullmq::BackendErrorKind::Timeout)
            );
            let refusal = matches!(***e, Error::Script(_));
            let allowed = sqlstate(e).is_some_and(|c| also_allowed.contains(&c.as_str()));
            !(connection || refusal || allowed)
        })
        .map(|e| format!("{e} ({:?})", e.backend_kind()))
        .collect()
}

/// A backend on `url` in `schema` (migrating it), with short timeouts so outages show fast.
pub(crate) async fn backend(url: &str, schema: &SchemaName, queue: &QueueName) -> PostgresBackend {
    backend_polling(url, schema, queue, Duration::from_millis(100)).await
}

/// [`backend`], polling every `poll` while its `LISTEN` connection is down.
async fn backend_polling(
    url: &str,
    schema: &SchemaName,
    queue: &QueueName,
    poll: Duration,
) -> PostgresBackend {
    let options = PostgresOptions::new(url)
        .schema(schema.clone())
        .migrate(true)
        .connect_timeout(Duration::from_secs(2))
        .poll_interval(poll);
    PostgresBackend::connect(&options, queue.clone())
        .await
        .unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

/// Worker settings that make a fault visible within seconds: short locks, a frequent
/// stalled check, a short pause after a connection error, and room for a few stalls.
fn fault_tolerant_worker() -> WorkerOptions {
    WorkerOptions::new()
        .concurrency(4)
        .lock_duration(Duration::from_millis(1500))
        .stalled_interval(Duration::from_millis(300))
        .max_stalled_count(10)
        .run_retry_delay(Duration::from_millis(200))
        .drain_delay(Duration::from_secs(10))
}

/// The queue a fault test runs: its server, schema and name, and a producer's queue (left
/// alone by the faults that target the worker).
struct Target {
    url: String,
    schema: SchemaName,
    name: QueueName,
    producer: Queue<PostgresBackend>,
}

impl Target {
    async fn new(url: String, schema: SchemaName, name: &str) -> Self {
        let name = QueueName::new(name).unwrap();
        let producer = Queue::try_new(name.clone(), backend(&url, &schema, &name).await)
            .expect("the backend is bound to this queue");
        Self {
            url,
            schema,
            name,
            producer,
        }
    }

    /// Queue `name` in the schema `faults` of a private cluster started for the test (with
    /// panics watched); `None` when no cluster can be started (see [`Cluster::start`]).
    async fn on_new_cluster(name: &str) -> Option<(Cluster, Self)> {
        watch_panics();
        let cluster = Cluster::start()?;
        let target = Self::new(cluster.url(), SchemaName::new("faults").unwrap(), name).await;
        Some((cluster, target))
    }

    /// A fault-tolerant counting worker (40 ms a job) of its own, whose events are recorded.
    async fn worker(
        &self,
    ) -> (
        Worker<PostgresBackend, impl bullmq::Processor<PostgresBackend>>,
        Runs,
        Arc<Mutex<Reported>>,
    ) {
        let (worker, runs) = counting_worker(
            &self.name,
            backend(&self.url, &self.schema, &self.name).await,
            fault_tolerant_worker(),
            Duration::from_millis(40),
        )
        .await;
        let reported = record(worker.events());
        (worker, runs, reported)
    }

    /// [`produce`] on the producer's backend.
    fn produce(
        &self,
        max: usize,
        every: Duration,
    ) -> tokio::task::JoinHandle<(BTreeSet<String>, Vec<Error>)> {
        let queue = Queue::try_new(self.name.clone(), self.producer.backend().clone())
            .expect("the backend is bound to this queue");
        produce(queue, max, every)
    }

    /// A checking pool in the schema.
    async fn check_pool(&self) -> PgPool {
        check_pool(&self.url, &self.schema).await
    }
}

/// Waits (up to 30 s) until every job of `ids` is completed, then checks each completed once.
async fn assert_all_completed(pool: &PgPool, queue: &QueueName, ids: &BTreeSet<String>) {
    wait_completed(pool, queue.as_str(), ids.len(), Duration::from_secs(30)).await;
    assert_completed_once(pool, queue.as_str(), ids).await;
}

/// How many runs were runs again (beyond each job's first).
fn reruns(runs: &Runs) -> u32 {
    runs.lock().unwrap().values().map(|n| n - 1).sum()
}

/// The worker is still running after the faults: closes it; no code outside the test panicked.
async fn close_running<P: bullmq::Processor<PostgresBackend>>(worker: Worker<PostgresBackend, P>) {
    assert!(worker.is_running());
    worker.close().await;
    assert_no_library_panic();
}

/// Adds job `id` to `ids` and to the queue, then waits (700 ms at most) until all of `ids` are
/// completed: the job was taken at once.
async fn add_taken_at_once(
    producer: &Queue<PostgresBackend>,
    pool: &PgPool,
    id: &str,
    ids: &mut BTreeSet<String>,
) {
    add_until_stored(producer, id, &mut Vec::new()).await;
    ids.insert(id.to_owned());
    let queue = producer.name().as_str();
    wait_completed(pool, queue, ids.len(), Duration::from_millis(700)).await;
}

/// Waits (up to 5 s, polling every `poll`) for the one session named `application_name`.
async fn wait_listen_back(admin: &mut PgConnection, application_name: &str, poll: Duration) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while sessions(admin, application_name).await != 1 {
        assert!(
            Instant::now() < deadline,
            "the LISTEN connection did not come back"
        );
        // Poll interval of a loop that names, when it gives up, what is still pending.
        tokio::time::sleep(poll).await;
    }
}

// ---------------------------------------------------------------------------------------------
// R8: connections and the LISTEN connection terminated
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn r8_terminated_connections_lose_no_job() {
    watch_panics();
    let guard = SchemaGuard::of(SchemaName::new(unique("pgf_r8")).unwrap());
    let pool_app = unique("r8pool");

    // The producer's connections are left alone; the worker's are named so they can be killed.
    // Its poll fallback is slow (1 s), so that a quick pickup at the end proves the re-opened
    // LISTEN connection hears notifications.
    let target = Target::new(database_url(), guard.name().clone(), &unique("r8")).await;
    let Target {
        url,
        schema,
        name,
        producer,
    } = &target;
    let worker_backend = backend_polling(
        &named_url(url, &pool_app),
        schema,
        name,
        Duration::from_secs(1),
    )
    .await;
    let listen_app = worker_backend.client_name(&ClientRole::Worker { name: None });
    let (worker, runs) = counting_worker(
        name,
        worker_backend,
        fault_tolerant_worker(),
        Duration::from_millis(15),
    )
    .await;
    let reported = record(worker.events());
    let mut admin = admin(url).await.unwrap();
    assert_eq!(
        sessions(&mut admin, &listen_app).await,
        1,
        "the LISTEN connection"
    );

    let producing = target.produce(150, Duration::from_millis(25));
    // Kill the LISTEN connection, the pool, or both, every 250 ms while jobs flow.
    let (mut listen_kills, mut pool_kills) = (0, 0);
    for round in 0..16 {
        // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
        tokio::time::sleep(Duration::from_millis(250)).await;
        if round % 3 != 1 {
            listen_kills += terminate(&mut admin, &listen_app).await;
        }
        if round % 3 != 0 {
            pool_kills += terminate(&mut admin, &pool_app).await;
        }
    }
    let (ids, add_failures) = producing.await.unwrap();
    assert!(add_failures.is_empty(), "the producer was not touched");
    assert!(
        listen_kills >= 5,
        "LISTEN connections killed: {listen_kills}"
    );
    assert!(pool_kills >= 5, "pooled connections killed: {pool_kills}");

    let pool = target.check_pool().await;
    assert_all_completed(&pool, name, &ids).await;

    // The LISTEN connection is back, and hears: a job added now is taken at once, well
    // before the 10 s drain delay would end the worker's wait, or the 1 s poll would find it.
    wait_listen_back(&mut admin, &listen_app, Duration::from_millis(50)).await;
    // Fixed wait: lets the worker settle into its LISTEN wait before the probe (the probe
    // shows whether it is woken).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let added = Instant::now();
    let mut probe_ids = ids.clone();
    add_taken_at_once(producer, &pool, "probe", &mut probe_ids).await;
    let took = added.elapsed();

    // A job added just as the LISTEN connection dies (its notification may be lost with it)
    // is still taken at once: the re-opened connection makes the idle worker look again.
    for i in 0..5 {
        // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(terminate(&mut admin, &listen_app).await, 1, "gap {i}");
        add_taken_at_once(producer, &pool, &format!("gap{i}"), &mut probe_ids).await;
        wait_listen_back(&mut admin, &listen_app, Duration::from_millis(20)).await;
    }
    assert_completed_once(&pool, name.as_str(), &probe_ids).await;

    let reported = std::mem::take(&mut *reported.lock().unwrap());
    eprintln!(
        "R8: {listen_kills} LISTEN and {pool_kills} pooled sessions killed; {} worker errors, \
         {} stalled, {} jobs run again; probe took {took:?}",
        reported.errors.len(),
        reported.stalled.len(),
        reruns(&runs)
    );
    // Commands on killed connections failed, and were reported rather than panicking.
    assert!(!reported.errors.is_empty(), "no error reported");
    let odd = unexpected_errors(&reported.errors, &[]);
    assert!(odd.is_empty(), "unexpected worker errors: {odd:#?}");
    close_running(worker).await;
}

// ---------------------------------------------------------------------------------------------
// R9: the server crashes and restarts
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn r9_server_crash_and_restart_lose_no_job() {
    let Some((cluster, target)) = Target::on_new_cluster("r9").await else {
        return;
    };
    let Target { name, producer, .. } = &target;

    // A "ghost" worker took a job just before the crash and never came back: at the crash the
    // job is active under a live lock that nobody will renew.
    let ghost_lock = Duration::from_secs(4);
    add_until_stored(producer, "ghost", &mut Vec::new()).await;
    // Lower bounds only (the reply of the take, or of `pg_ctl start`, may come late on a
    // loaded machine): the lock cannot run out before the take began plus its duration.
    let taking = Instant::now();
    let taken = producer
        .backend()
        .move_to_active(&fetch_params("ghost-token", ghost_lock, None))
        .await
        .unwrap();
    assert_eq!(taken.job.expect("the ghost's job").id.as_str(), "ghost");
    let ghost_expires = taking + ghost_lock;

    let (worker, runs, reported) = target.worker().await;
    let producing = target.produce(80, Duration::from_millis(30));
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    // The crash: `pg_ctl stop -m immediate` (no shutdown checkpoint, transactions in flight
    // are lost), a spell with no server, then recovery from the WAL.
    tokio::task::block_in_place(|| cluster.pg_ctl("stop"));
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let errors_while_down = reported.lock().unwrap().errors.len();
    let restarted = Instant::now();
    tokio::task::block_in_place(|| cluster.pg_ctl("start"));

    // Every transition was all or nothing: no row is half-moved after recovery.
    let pool = target.check_pool().await;
    assert_invariants(&pool, name.as_str()).await;

    let (mut ids, add_failures) = producing.await.unwrap();
    ids.insert("ghost".to_owned());
    assert_all_completed(&pool, name, &ids).await;

    // The ghost's job came back through the stalled check once its lock ran out, and only
    // then (its lock was still live at the crash).
    let reported = std::mem::take(&mut *reported.lock().unwrap());
    let ghost: Vec<_> = reported
        .stalled
        .iter()
        .filter(|(id, _)| id == "ghost")
        .collect();
    assert_eq!(ghost.len(), 1, "stalled: {:?}", reported.stalled);
    assert!(
        ghost[0].1 >= ghost_expires && ghost[0].1 >= restarted,
        "the ghost's job came back before its lock ran out or before the restart"
    );
    let stalled_count: i32 =
        sqlx::query_scalar("SELECT stalled_count FROM job WHERE queue = $1 AND id = 'ghost'")
            .bind(name.as_str())
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(stalled_count, 1);

    // The outage was reported, as errors, while it lasted.
    assert!(
        errors_while_down > 0,
        "the worker reported no error while the server was down"
    );
    let odd = unexpected_errors(&reported.errors, &[]);
    assert!(odd.is_empty(), "unexpected worker errors: {odd:#?}");
    assert!(!add_failures.is_empty(), "the producer met the outage");
    eprintln!(
        "R9: {} worker errors ({errors_while_down} while down), {} producer retries, \
         stalled {:?}, {} jobs run again",
        reported.errors.len(),
        add_failures.len(),
        reported.stalled.iter().map(|s| &s.0).collect::<Vec<_>>(),
        reruns(&runs)
    );
    close_running(worker).await;
}

// ---------------------------------------------------------------------------------------------
// R10: the primary turns read-only, then a writable one takes over
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn r10_read_only_primary_then_failover_lose_no_job() {
    let Some((_cluster, target)) = Target::on_new_cluster("r10").await else {
        return;
    };
    let (worker, runs, reported) = target.worker().await;
    let producing = target.produce(100, Duration::from_millis(30));
    let mut admin = admin(&target.url).await.unwrap();
    // This session stays writable whatever the server's default becomes.
    sqlx::raw_sql("SET default_transaction_read_only = off")
        .execute(&mut admin)
        .await
        .unwrap();
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(Duration::from_millis(800)).await;

    // The primary turns read-only, for every session, open ones included.
    // Separate statements: ALTER SYSTEM cannot run in the implicit transaction of a batch.
    for sql in [
        "ALTER SYSTEM SET default_transaction_read_only = on",
        "SELECT pg_reload_conf()",
    ] {
        sqlx::raw_sql(sql).execute(&mut admin).await.unwrap();
    }
    eventually(
        "the worker reports SQLSTATE 25006 while the server is read-only",
        Duration::from_secs(5),
        || async {
            reported
                .lock()
                .unwrap()
                .errors
                .iter()
                .any(|e| sqlstate(e).as_deref() == Some("25006"))
        },
    )
    .await;
    // Fixed wait: spaces the faults (or the jobs) over time, as a real run would meet them.
    tokio::time::sleep(Duration::from_millis(1000)).await;

    // Failover, as a client sees it: new sessions land on a writable primary, while the
    // sessions already open stay on the read-only one (their default came from the server's
    // configuration, which a database setting does not override in open sessions).
    sqlx::raw_sql("ALTER DATABASE postgres SET default_transaction_read_only = off")
        .execute(&mut admin)
        .await
        .unwrap();
    let failed_over = Instant::now();
    let completed_before = reported.lock().unwrap().completed;
    eventually(
        "the worker resumes after the failover (no process restart allowed)",
        Duration::from_secs(10),
        || async { reported.lock().unwrap().completed != completed_before },
    )
    .await;
    let resumed_after = failed_over.elapsed();

    let (ids, add_failures) = producing.await.unwrap();
    let pool = target.check_pool().await;
    assert_all_completed(&pool, &target.name, &ids).await;

    assert!(
        add_failures
            .iter()
            .any(|e| sqlstate(e).as_deref() == Some("25006")),
        "adds failed with SQLSTATE 25006 while read-only"
    );
    let reported = std::mem::take(&mut *reported.lock().unwrap());
    let odd = unexpected_errors(&reported.errors, &["25006"]);
    assert!(odd.is_empty(), "unexpected worker errors: {odd:#?}");
    eprintln!(
        "R10: {} worker errors, {} producer retries, {} stalled, {} jobs run again; \
         resumed {resumed_after:?} after the failover",
        reported.errors.len(),
        add_failures.len(),
        reported.stalled.len(),
        reruns(&runs)
    );
    close_running(worker).await;
}

// ---------------------------------------------------------------------------------------------
// I7: identifiers and parameters
// ---------------------------------------------------------------------------------------------

/// Queue names full of SQL metacharacters are bound as parameters: stored verbatim, processed,
/// counted and removed as any other name, and never executed. The schema name is the one
/// identifier spliced into SQL; `SchemaName::new`'s refusals are tested in
/// `bullmq-postgres/tests/connection.rs`, so this only runs a schema whose valid name needs
/// quoting (mixed case, `$$`) end to end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i7_hostile_queue_names_are_data_never_sql() {
    watch_panics();
    let schema_name = format!(
        "I7$$Mixed_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let guard = SchemaGuard::of(SchemaName::new(schema_name).unwrap());
    let schema = guard.name().clone();
    let url = database_url();
    let names = [
        "it's",
        "say \"hi\"",
        "x'); DROP TABLE job; --",
        "$$; DROP SCHEMA public CASCADE; $$",
        "$tag$ SELECT pg_sleep(10) $tag$",
        "back\\slash\\\\ and \\x41",
        "ünïcødé 🚀 日本語",
        "q%_",
        "q%_x",
        "qax",
    ];
    let base = backend(&url, &schema, &QueueName::new("base").unwrap()).await;
    let pool = check_pool(&url, &schema).await;
    sqlx::raw_sql("CREATE TABLE canary (x int); INSERT INTO canary VALUES (1);")
        .execute(&pool)
        .await
        .unwrap();

    let custom_id = "id'\"; $$ \\ ü";
    let mut workers = Vec::new();
    for raw in names {
        let name = QueueName::new(raw).unwrap();
        let queue = Queue::try_new(name.clone(), base.sibling(name.clone()))
            .expect("the backend is bound to this queue");
        queue
            .add("one", &json!({ "q": raw }), JobOptions::new())
            .await
            .unwrap();
        queue
            .add(
                "custom",
                &json!({ "q": raw }),
                JobOptions::new().job_id(custom_id),
            )
            .await
            .unwrap();
        let bulk = (0..2)
            .map(|i| BulkJob {
                name: format!("bulk '{i}'"),
                data: json!({ "q": raw, "i": i }),
                opts: JobOptions::new(),
            })
            .collect();
        queue.add_bulk(bulk).await.unwrap();
        let worker = Worker::new(
            name.clone(),
            base.sibling(name.clone()),
            WorkerOptions::new().drain_delay(Duration::from_secs(10)),
            |job: ActiveJob<PostgresBackend>, _cancel: CancellationToken| async move {
                Ok(serde_json::from_str::<Value>(&job.data).unwrap())
            },
        )
        .await
        .unwrap();
        workers.push((queue, worker));
    }

    let completed = [JobType::State(JobState::Completed)];
    for (queue, _) in &workers {
        eventually(
            &format!("queue {:?} completes its jobs", queue.name()),
            Duration::from_secs(10),
            || async { queue.get_job_count_by_types(&completed).await.unwrap() >= 4 },
        )
        .await;
        let raw = queue.name().as_str();
        let job = queue
            .get_job(&JobId::custom(custom_id).unwrap())
            .await
            .unwrap()
            .expect("the custom id reads back");
        assert_eq!(job.id.as_str(), custom_id);
        assert_eq!(
            serde_json::from_str::<Value>(&job.data).unwrap(),
            json!({ "q": raw })
        );
        assert_eq!(
            job.return_value
                .as_deref()
                .map(|v| serde_json::from_str::<Value>(v).unwrap()),
            Some(json!({ "q": raw }))
        );
        assert_eq!(
            queue.count().await.unwrap(),
            0,
            "{raw:?}: nothing left waiting"
        );
    }
    for (_, worker) in &workers {
        worker.close().await;
    }

    // Stored verbatim, and nothing was executed: every table is still there.
    let stored: BTreeSet<String> = sqlx::query_scalar("SELECT DISTINCT queue FROM job")
        .fetch_all(&pool)
        .await
        .unwrap()
        .into_iter()
        .collect();
    let expected: BTreeSet<String> = names.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(stored, expected);
    let canary: i32 = sqlx::query_scalar("SELECT x FROM canary")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(canary, 1);
    let public: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public')")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(public);

    // Removing one queue touches no other, even names it would match as a LIKE pattern.
    let (doomed, _) = &workers[7];
    assert_eq!(doomed.name().as_str(), "q%_");
    doomed.obliterate(true, 1000).await.unwrap();
    for (queue, _) in &workers {
        let left = queue.get_job_count_by_types(&completed).await.unwrap();
        let expected = if queue.name().as_str() == "q%_" { 0 } else { 4 };
        assert_eq!(left, expected, "{:?}", queue.name());
    }
    assert_no_library_panic();
}
