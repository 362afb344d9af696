//! The autoscaling gauges (`bullmq.queue.backlog`, `…oldest_waiting_age`, `…active`): set by
//! each `Queue::scaling_signals` read and kept current by `report_scaling_signals`. A recorder
//! local to this test's thread (the binary's global one belongs to `metrics.rs`), with a
//! current-thread runtime, so the reporter's task records on it too.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::held::fetch_params;
use std::collections::HashMap;
use std::time::Duration;

use bullmq::backend::Transitions;
use bullmq::clock::ManualClock;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::telemetry::metrics as names;
use bullmq::{Error, JobOptions, Prefix, Queue, QueueName};
use metrics_util::MetricKind;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use serde_json::json;

use crate::support;

const QUEUE: &str = "obs-scaling";
/// Where the stopped clock starts.
const T0: u64 = 1_700_000_000_000;

/// This test's queue's gauges, by name. A snapshot takes the values out of the debugging
/// recorder (each reads 0 afterwards until set again), so each check reads one snapshot.
fn gauges(snapshotter: &Snapshotter) -> HashMap<String, f64> {
    crate::metrics::values_of(snapshotter, QUEUE)
        .into_iter()
        .filter_map(|((kind, name, _), value)| match value {
            DebugValue::Gauge(g) if kind == MetricKind::Gauge => Some((name, g.into_inner())),
            _ => None,
        })
        .collect()
}

/// The three scaling gauges in one snapshot: backlog, active, oldest waiting age.
fn scaling(snapshotter: &Snapshotter) -> [Option<f64>; 3] {
    let g = gauges(snapshotter);
    [
        names::QUEUE_BACKLOG,
        names::QUEUE_ACTIVE,
        names::QUEUE_OLDEST_WAITING_AGE,
    ]
    .map(|name| g.get(name).copied())
}

#[test]
fn scaling_signals_set_the_gauges_and_the_reporter_keeps_them_current() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorder, || {
        runtime.block_on(run(&snapshotter));
    });
}

async fn run(snapshotter: &Snapshotter) {
    let prefix = support::unique_prefix();
    let _cleanup = support::PrefixGuard(prefix.clone());
    let clock = ManualClock::new(T0);
    let options = RedisOptions::new(support::redis_url()).prefix(Prefix::new(&prefix).unwrap());
    let backend = RedisBackend::connect(&options, QueueName::new(QUEUE).unwrap())
        .await
        .expect("connect")
        .with_clock(clock.clone());
    let queue = Queue::try_new(QueueName::new(QUEUE).unwrap(), backend)
        .expect("the backend is bound to this queue");
    for priority in [0, 0, 3] {
        queue
            .add("j", &json!({}), JobOptions::new().priority(priority))
            .await
            .unwrap();
    }
    let fetch = fetch_params("t", Duration::from_secs(30), None);
    let taken = queue.backend().move_to_active(&fetch).await.unwrap();
    assert!(taken.job.is_some());
    assert_eq!(scaling(snapshotter), [None; 3], "not read yet");

    clock.set(T0 + 3_250);
    let signals = queue.scaling_signals().await.unwrap();
    assert_eq!((signals.backlog, signals.active), (2, 1));
    // The age in seconds since the jobs were added.
    assert_eq!(scaling(snapshotter), [Some(2.0), Some(1.0), Some(3.25)]);

    // A period of zero is refused, naming the field.
    match queue.report_scaling_signals(Duration::ZERO) {
        Err(Error::Invalid(e)) => {
            assert_eq!(e.problems()[0].path, "every");
            assert!(e.to_string().contains("at least 1 ms"), "{e}");
        }
        other => panic!("expected a validation error, got {other:?}"),
    }

    // The reporter reads again by itself: a new job shows in the gauges.
    let reporter = queue
        .report_scaling_signals(Duration::from_millis(20))
        .unwrap();
    queue.add("j", &json!({}), JobOptions::new()).await.unwrap();
    clock.set(T0 + 10_000);
    support::eventually(
        "the reporter to count the new job",
        Duration::from_secs(20),
        || async { scaling(snapshotter) == [Some(3.0), Some(1.0), Some(10.0)] },
    )
    .await;
    reporter.stop();
}
