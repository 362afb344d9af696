//! `retry --state failed` on many failed jobs: each retried once, a progress bar under a
//! pseudo-terminal and none when piped, interrupted half way (SIGINT) and run again.
//!
//! 10,000 jobs on Redis and 1,000 on PostgreSQL by default; `BULLMQ_CLI_RETRY_JOBS` sets the
//! Redis count (100,000 for the full run).

use std::collections::{HashMap, HashSet};
use std::process::{Command, Stdio};
use std::time::Duration;

use bullmq::backend::Range;
use bullmq::job::JobType;
use bullmq::{JobState, Queue};
use bullmq_test_support::{eventually, fill_failed};

use crate::support::{BIN, Kind, Out, Store, count};

/// Fills queue `name` with `n` failed jobs: added in bulk, failed by a quick worker.
async fn failed_jobs(store: &Store, name: &str, n: u64) -> Queue<bullmq::AnyBackend> {
    let queue = store.queue(name).await.max_len_events(n * 10);
    let worker_backend = store.backend(name).await;
    fill_failed(&queue, worker_backend, n, 100, Duration::from_secs(240)).await;
    queue
}

/// The progress bar's own text (its label and the template around the bar).
const BAR: &str = "retry [";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retrying_many_failed_jobs_retries_each_once_even_when_interrupted() {
    let redis_jobs = std::env::var("BULLMQ_CLI_RETRY_JOBS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000_u64);
    for (store, n) in [
        (Store::redis().await, redis_jobs),
        (Store::postgres().await, 1_000),
    ] {
        let queue = failed_jobs(&store, "bulk", n).await;
        let batch = (n / 20).max(1);
        let batch_arg = batch.to_string();

        // Piped: no bar. Interrupted once the first batches are done.
        let child = store.spawn(&[
            "retry",
            "bulk",
            "--state",
            "failed",
            "--yes",
            "--batch",
            &batch_arg,
            "--throttle-ms",
            "100",
            "-o",
            "json",
        ]);
        eventually(
            "the first batches are retried",
            Duration::from_secs(60),
            || async { count(&queue, JobState::Failed).await <= n - 2 * batch },
        )
        .await;
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let out = child.wait_with_output().unwrap();
        let out = Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
        }
        .expect(1);
        let summary = out.json();
        assert_eq!(summary["interrupted"], true, "{out:?}");
        assert_eq!(summary["matched"], n);
        let done = summary["done"].as_u64().unwrap();
        assert!(
            done >= 2 * batch && done < n,
            "{summary} ({:?})",
            store.kind
        );
        assert!(
            out.stderr.contains("interrupted") && !out.stderr.contains(BAR),
            "{out:?}"
        );
        let failed = count(&queue, JobState::Failed).await;
        assert_eq!(failed, n - done, "the summary says what was done");
        assert_eq!(count(&queue, JobState::Waiting).await, done);

        // Again, under a pseudo-terminal: the bar is drawn, and the rest is retried.
        let mut line: Vec<String> = vec![BIN.to_owned()];
        line.extend(
            store
                .args(&[
                    "retry",
                    "bulk",
                    "--yes",
                    "--batch",
                    &batch_arg,
                    "--throttle-ms",
                    "20",
                ])
                .iter()
                .map(|a| format!("'{a}'")),
        );
        let mut script = Command::new("script");
        script
            .args(["-qec", &line.join(" "), "/dev/null"])
            .env_remove("BULLMQ_URL")
            .env_remove("REDIS_URL")
            .env_remove("DATABASE_URL")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        let pty = script.output().unwrap();
        let shown = String::from_utf8_lossy(&pty.stdout).into_owned();
        assert!(pty.status.success(), "{shown}");
        assert!(
            shown.contains(BAR),
            "no progress bar on a terminal: {shown:?}"
        );
        assert!(
            shown.contains(&format!("retried {failed} failed jobs")),
            "{shown:?}"
        );

        // Each job retried once: none failed, each waiting once.
        assert_eq!(count(&queue, JobState::Failed).await, 0);
        let waiting = queue.backend().clone();
        let ids = bullmq::backend::Queries::get_ranges(
            &waiting,
            &[JobType::State(JobState::Waiting)],
            Range::ALL,
        )
        .await
        .unwrap();
        let unique: HashSet<_> = ids.iter().collect();
        assert_eq!((ids.len() as u64, unique.len() as u64), (n, n));
        if store.kind == Kind::Redis {
            // And the event stream has exactly one failed → waiting move per job.
            let mut con = bullmq_test_support::redis().await;
            let key = format!("{}:bulk:events", store.ns);
            let mut moves: HashMap<String, u32> = HashMap::new();
            let mut from = "-".to_owned();
            loop {
                // In pages: one reply of the whole stream would outlast the response timeout.
                let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg(&from)
                    .arg("+")
                    .arg("COUNT")
                    .arg(2000)
                    .query_async(&mut con)
                    .await
                    .unwrap();
                let Some((last, _)) = entries.last() else {
                    break;
                };
                from = format!("({last}");
                for (_, fields) in &entries {
                    let get = |k: &str| fields.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone());
                    if get("event").as_deref() == Some("waiting")
                        && get("prev").as_deref() == Some("failed")
                    {
                        *moves.entry(get("jobId").unwrap()).or_default() += 1;
                    }
                }
            }
            assert_eq!(moves.len() as u64, n, "every job retried");
            assert!(moves.values().all(|m| *m == 1), "a job retried twice");
        }
    }
}
