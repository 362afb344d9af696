//! The metrics a known workload records, read back through a real recorder (metrics-util's
//! `DebuggingRecorder`, installed for this whole test binary): 4 jobs that complete, 2 that
//! fail for good, 3 that fail once and complete when retried.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use bullmq::JobState;
use bullmq::flow::{FlowJob, FlowProducer};
use bullmq::job::JobType;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::scheduler::{JobScheduler, JobTemplate};
use bullmq::telemetry::metrics as names;
use bullmq::{
    JobError, JobOptions, Prefix, Queue, QueueName, RepeatOptions, Worker, WorkerEvent,
    WorkerOptions,
};
use metrics_util::MetricKind;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use serde_json::json;

const QUEUE: &str = "obs-metrics";
/// How long the test waits between the last add and the worker's start.
const WAIT: Duration = Duration::from_millis(100);
/// How long an `ok` job's processor sleeps.
const WORK: Duration = Duration::from_millis(50);

/// Milliseconds, as the histograms record them.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
/// Where the flow and the scheduler add (no worker there).
const MORE: &str = "obs-metrics-more";

async fn backend(prefix: &str) -> RedisBackend {
    backend_of(prefix, QUEUE).await
}

async fn backend_of(prefix: &str, queue: &str) -> RedisBackend {
    let options =
        RedisOptions::new(support::redis_url()).prefix(Prefix::new(prefix).expect("prefix"));
    RedisBackend::connect(&options, QueueName::new(queue).unwrap())
        .await
        .expect("connect")
}

/// `(kind, name, sorted labels)` → value, for this test's queue only.
pub(crate) type Values = HashMap<(MetricKind, String, Vec<(String, String)>), DebugValue>;

/// What the recorder holds now for `queue`.
pub(crate) fn values_of(snapshotter: &Snapshotter, queue: &str) -> Values {
    snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter_map(|(key, _, _, value)| {
            let (kind, key) = key.into_parts();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            (label(&labels, names::LABEL_QUEUE).as_deref() == Some(queue))
                .then(|| ((kind, key.name().to_owned(), labels), value))
        })
        .collect()
}

fn label(labels: &[(String, String)], key: &str) -> Option<String> {
    labels
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

fn counter(values: &Values, name: &str, job_name: &str) -> u64 {
    values
        .iter()
        .filter(|((kind, n, labels), _)| {
            *kind == MetricKind::Counter
                && n == name
                && label(labels, names::LABEL_JOB_NAME).as_deref() == Some(job_name)
        })
        .map(|(_, v)| match v {
            DebugValue::Counter(n) => *n,
            other => panic!("{other:?}"),
        })
        .sum()
}

/// The samples of histogram `name` whose labels include every `(key, value)` of `with`.
fn samples_where(values: &Values, name: &str, with: &[(&str, &str)]) -> Vec<f64> {
    values
        .iter()
        .filter(|((kind, n, labels), _)| {
            *kind == MetricKind::Histogram
                && n == name
                && with
                    .iter()
                    .all(|(k, v)| label(labels, k).as_deref() == Some(*v))
        })
        .flat_map(|(_, v)| match v {
            DebugValue::Histogram(s) => s.iter().map(|x| x.into_inner()).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn samples(values: &Values, name: &str) -> usize {
    samples_where(values, name, &[]).len()
}

fn gauge(values: &Values, name: &str, label_key: &str, label_value: &str) -> Option<f64> {
    values
        .iter()
        .find(|((kind, n, labels), _)| {
            *kind == MetricKind::Gauge
                && n == name
                && label(labels, label_key).as_deref() == Some(label_value)
        })
        .map(|(_, v)| match v {
            DebugValue::Gauge(g) => g.into_inner(),
            other => panic!("{other:?}"),
        })
}

#[tokio::test]
async fn a_known_workload_records_exactly_its_numbers() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder
        .install()
        .expect("the only recorder of this binary");

    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let queue = Queue::try_new(QueueName::new(QUEUE).unwrap(), backend(&prefix).await)
        .expect("the backend is bound to this queue");
    // Every duration and wait recorded lies within this window.
    let window = std::time::Instant::now();
    for _ in 0..4 {
        queue
            .add("ok", &json!({}), JobOptions::new())
            .await
            .unwrap();
    }
    for _ in 0..2 {
        queue
            .add("bad", &json!({}), JobOptions::new().attempts(3))
            .await
            .unwrap();
    }
    for _ in 0..3 {
        queue
            .add("flaky", &json!({}), JobOptions::new().attempts(2))
            .await
            .unwrap();
    }
    // Every job waits at least this long between added and started.
    tokio::time::sleep(WAIT).await;
    let worker = Worker::new(
        QueueName::new(QUEUE).unwrap(),
        backend(&prefix).await,
        WorkerOptions::new().concurrency(3),
        |job, _cancel| async move {
            match job.name.as_str() {
                "bad" => Err(JobError::unrecoverable("bad job")),
                "flaky" if job.attempts_made == 0 => Err(JobError::failed("once")),
                _ => {
                    // An `ok` job takes at least this long.
                    tokio::time::sleep(WORK).await;
                    Ok(json!(1))
                }
            }
        },
    )
    .await
    .unwrap();
    let mut events = worker.events();
    let mut done = 0;
    tokio::time::timeout(Duration::from_secs(30), async {
        while done < 9 {
            if let Ok(WorkerEvent::Completed { .. } | WorkerEvent::Failed { retried: false, .. }) =
                events.recv().await
            {
                done += 1;
            }
        }
    })
    .await
    .expect("every job finishes");
    worker.close().await;
    let window_ms = ms(window.elapsed());
    queue
        .record_job_counts_metric(&[
            JobType::State(JobState::Completed),
            JobType::State(JobState::Failed),
            JobType::Wait,
        ])
        .await
        .unwrap();

    let values = values_of(&snapshotter, QUEUE);

    for (name, ok, bad, flaky) in [
        (names::JOBS_ADDED, 4, 2, 3),
        (names::JOBS_COMPLETED, 4, 0, 3),
        (names::JOBS_FAILED, 0, 2, 0),
        (names::JOBS_RETRIED, 0, 0, 3),
        (names::JOBS_DELAYED, 0, 0, 0),
    ] {
        assert_eq!(counter(&values, name, "ok"), ok, "{name} of ok");
        assert_eq!(counter(&values, name, "bad"), bad, "{name} of bad");
        assert_eq!(counter(&values, name, "flaky"), flaky, "{name} of flaky");
    }
    // 12 attempts: 4 + 2 + 3 × 2, each timed (duration); the wait is sampled at each job's
    // first start only: 9.
    assert_eq!(samples(&values, names::JOB_DURATION), 12);
    assert_eq!(samples(&values, names::JOB_WAIT_TIME), 9);

    // The values: each attempt's duration under its job and outcome, an `ok` one at least the
    // processor's sleep, every one (and so every sum) within the test's window.
    let duration = |job: &str, state: &str| {
        samples_where(
            &values,
            names::JOB_DURATION,
            &[(names::LABEL_JOB_NAME, job), (names::LABEL_STATE, state)],
        )
    };
    let ok = duration("ok", "completed");
    assert_eq!(ok.len(), 4, "{ok:?}");
    assert!(ok.iter().all(|d| *d >= ms(WORK)), "{ok:?} >= {WORK:?}");
    assert!(ok.iter().sum::<f64>() >= 4.0 * ms(WORK), "{ok:?}");
    assert_eq!(duration("bad", "failed").len(), 2);
    assert_eq!(duration("flaky", "retried").len(), 3);
    assert_eq!(duration("flaky", "completed").len(), 3);
    let all = samples_where(&values, names::JOB_DURATION, &[]);
    assert!(
        all.iter().all(|d| (0.0..=window_ms).contains(d)),
        "{all:?} within {window_ms} ms"
    );
    // Each job's wait, sampled once, from its add to its first start: at least the pause
    // before the worker started, at most the window.
    let waits = samples_where(&values, names::JOB_WAIT_TIME, &[]);
    assert!(
        waits.iter().all(|w| (ms(WAIT)..=window_ms).contains(w)),
        "{waits:?} within {WAIT:?}..{window_ms} ms"
    );
    for (job, n) in [("ok", 4), ("bad", 2), ("flaky", 3)] {
        let of_job = samples_where(
            &values,
            names::JOB_WAIT_TIME,
            &[(names::LABEL_JOB_NAME, job)],
        );
        assert_eq!(of_job.len(), n, "waits of {job}: {of_job:?}");
    }
    // With 3 at a time, the fourth `ok` job started only once an earlier one had run WORK.
    let ok_waits = samples_where(
        &values,
        names::JOB_WAIT_TIME,
        &[(names::LABEL_JOB_NAME, "ok")],
    );
    let longest = ok_waits.iter().copied().fold(0.0, f64::max);
    assert!(longest >= ms(WAIT + WORK), "{ok_waits:?}");
    assert_eq!(
        gauge(&values, names::WORKER_ACTIVE_JOBS, names::LABEL_WORKER, ""),
        Some(0.0),
        "no job in progress once closed"
    );
    assert_eq!(
        gauge(
            &values,
            names::QUEUE_JOBS,
            names::LABEL_QUEUE_JOBS_STATE,
            "completed"
        ),
        Some(7.0)
    );
    assert_eq!(
        gauge(
            &values,
            names::QUEUE_JOBS,
            names::LABEL_QUEUE_JOBS_STATE,
            "failed"
        ),
        Some(2.0)
    );
    assert_eq!(
        gauge(
            &values,
            names::QUEUE_JOBS,
            names::LABEL_QUEUE_JOBS_STATE,
            "wait"
        ),
        Some(0.0)
    );

    // Flows and scheduler iterations count as added too: a parent with two children, and
    // one upsert (its first iteration).
    FlowProducer::new(backend_of(&prefix, MORE).await)
        .add(
            FlowJob::new(QueueName::new(MORE).unwrap(), "parent", json!({}))
                .child(FlowJob::new(
                    QueueName::new(MORE).unwrap(),
                    "child",
                    json!({}),
                ))
                .child(FlowJob::new(
                    QueueName::new(MORE).unwrap(),
                    "child",
                    json!({}),
                )),
        )
        .await
        .unwrap();
    JobScheduler::new(backend_of(&prefix, MORE).await)
        .upsert(
            "tick",
            &RepeatOptions::every(Duration::from_secs(3600)),
            JobTemplate::named("tick"),
        )
        .await
        .unwrap()
        .expect("an iteration");
    let more = values_of(&snapshotter, MORE);
    assert_eq!(counter(&more, names::JOBS_ADDED, "parent"), 1);
    assert_eq!(counter(&more, names::JOBS_ADDED, "child"), 2);
    assert_eq!(counter(&more, names::JOBS_ADDED, "tick"), 1);
}
