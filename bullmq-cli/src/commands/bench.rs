//! `bench`: a quick throughput check against the server at hand: adds N jobs in bulk, then
//! processes them with one worker at concurrency C, and prints jobs per second in and out. It
//! works under a prefix (Redis) or schema (PostgreSQL) of its own, removed afterwards.

use std::time::{Duration, Instant};

use bullmq::job::JobType;
use bullmq::postgres::sqlx::{self, Connection as _, PgConnection};
use bullmq::{
    AnyBackend, BulkJob, ConnectOptions, JobError, JobOptions, JobState, Prefix, Queue, QueueName,
    Worker, WorkerOptions,
};
use serde_json::json;

use crate::cli::BenchArgs;
use crate::context::Ctx;
use crate::fail::{Failure, cause};
use crate::output;

/// The queue the benchmark fills.
const QUEUE: &str = "bench";

/// How long the worker may go without finishing a job before the run is abandoned.
const STALL: Duration = Duration::from_secs(60);

pub(super) async fn run(ctx: &Ctx, args: &BenchArgs) -> Result<(), Failure> {
    let url = ctx.store.url();
    let postgres = url.to_ascii_lowercase().starts_with("postgres");
    let tag = format!(
        "bullmq_bench_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos())
    );
    let mut options = ConnectOptions::new(url.to_owned());
    options = if postgres {
        options.schema(tag.clone()).migrate(true)
    } else {
        options.prefix(Prefix::new(tag.clone()).map_err(|e| Failure::failed(e.to_string()))?)
    };
    let namespace = if postgres { "schema" } else { "prefix" };
    eprintln!(
        "bench: {} jobs, concurrency {}, {namespace} {tag}",
        args.jobs, args.concurrency
    );
    let backend = options.connect(QUEUE).await.map_err(|e| {
        Failure::failed(format!(
            "cannot connect to {} for the benchmark: {}; check the URL and that the user may \
             write (and, on PostgreSQL, create a schema)",
            ctx.store.target(),
            cause(&e)
        ))
    })?;
    let result = measure(ctx, args, backend).await;
    let cleanup = clean_up(ctx, url, postgres, &tag).await;
    let item = result?;
    cleanup?;
    output::one(ctx.format, &item, || {
        format!(
            "added {} jobs in {:.2} s: {:.0} jobs/s in\nprocessed them in {:.2} s at concurrency {}: {:.0} jobs/s out",
            args.jobs,
            item["add_secs"].as_f64().unwrap_or(0.0),
            item["jobs_per_sec_in"].as_f64().unwrap_or(0.0),
            item["process_secs"].as_f64().unwrap_or(0.0),
            args.concurrency,
            item["jobs_per_sec_out"].as_f64().unwrap_or(0.0),
        )
    })
}

/// Adds, then processes; the two rates.
async fn measure(
    ctx: &Ctx,
    args: &BenchArgs,
    backend: AnyBackend,
) -> Result<serde_json::Value, Failure> {
    let name = QueueName::new(QUEUE).map_err(|e| Failure::failed(e.to_string()))?;
    let fail = |e: bullmq::Error| ctx.store.error("benchmark", QUEUE, &e);
    let queue = Queue::try_new(name.clone(), backend.clone()).map_err(fail)?;
    let started = Instant::now();
    let mut left = args.jobs;
    while left > 0 {
        let size = left.min(1000);
        let jobs = (0..size)
            .map(|i| BulkJob {
                name: "bench".to_owned(),
                data: json!({ "i": i }),
                opts: JobOptions::default(),
            })
            .collect();
        queue.add_bulk(jobs).await.map_err(fail)?;
        left -= size;
    }
    let add_secs = started.elapsed().as_secs_f64();

    let concurrency = usize::try_from(args.concurrency).unwrap_or(usize::MAX);
    let worker = Worker::new(
        name,
        backend,
        WorkerOptions::new().concurrency(concurrency),
        |_, _| async { Ok::<_, JobError>(json!(null)) },
    )
    .await
    .map_err(fail)?;
    let started = Instant::now();
    let completed = [JobType::State(JobState::Completed)];
    let (mut done, mut progress_at) = (0, Instant::now());
    while done < args.jobs {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = queue
            .get_job_count_by_types(&completed)
            .await
            .map_err(fail)?;
        if now > done {
            (done, progress_at) = (now, Instant::now());
        } else if progress_at.elapsed() > STALL {
            worker.close().await;
            return Err(Failure::failed(format!(
                "the benchmark's worker finished no job for {} s ({done} of {} done); check the \
                 server's load and logs",
                STALL.as_secs(),
                args.jobs
            )));
        }
    }
    let process_secs = started.elapsed().as_secs_f64();
    worker.close().await;
    let per_sec = |secs: f64| args.jobs as f64 / secs.max(1e-9);
    Ok(json!({
        "store": ctx.store.target(),
        "jobs": args.jobs,
        "concurrency": args.concurrency,
        "add_secs": add_secs,
        "jobs_per_sec_in": per_sec(add_secs),
        "process_secs": process_secs,
        "jobs_per_sec_out": per_sec(process_secs),
    }))
}

/// Removes the benchmark's keys (Redis) or schema (PostgreSQL).
async fn clean_up(ctx: &Ctx, url: &str, postgres: bool, tag: &str) -> Result<(), Failure> {
    let fail = |e: &dyn std::fmt::Display| {
        Failure::failed(format!(
            "the benchmark ran, but its {} {tag} could not be removed from {}: {}; remove it by \
             hand",
            if postgres { "schema" } else { "prefix" },
            ctx.store.target(),
            cause(e)
        ))
    };
    if postgres {
        let mut con = PgConnection::connect(url).await.map_err(|e| fail(&e))?;
        sqlx::query(&format!("DROP SCHEMA IF EXISTS \"{tag}\" CASCADE"))
            .execute(&mut con)
            .await
            .map_err(|e| fail(&e))?;
        let _ = con.close().await;
        return Ok(());
    }
    let client = redis::Client::open(url).map_err(|e| fail(&e))?;
    let mut con = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| fail(&e))?;
    let mut cursor = 0_u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{tag}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut con)
            .await
            .map_err(|e| fail(&e))?;
        if !keys.is_empty() {
            let _: u64 = redis::cmd("UNLINK")
                .arg(&keys)
                .query_async(&mut con)
                .await
                .map_err(|e| fail(&e))?;
        }
        cursor = next;
        if cursor == 0 {
            return Ok(());
        }
    }
}
