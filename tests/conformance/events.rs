//! The queue's event stream, read by `QueueEvents`.

use std::time::Duration;

use bullmq::{
    EventItem, JobOptions, QueueEvent, QueueEvents, QueueEventsOptions, QueueEventsProducer,
    WaitError,
};
use serde_json::json;

use crate::ctx::{Ctx, WAIT, fast};
use crate::store::Store;
use crate::support::custom_events::{assert_bad_custom_events_refused, numbered};
use crate::support::eventually;

/// A reader that is already listening.
pub(crate) async fn reader<S: Store>(ctx: &Ctx<S>) -> QueueEvents<S::B> {
    let events = QueueEvents::new(ctx.backend().await, QueueEventsOptions::new()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), events.wait_until_ready())
        .await
        .expect("ready in time")
        .unwrap();
    events
}

/// Adds `later`, a job due in an hour; its id.
pub(crate) async fn add_later<S: Store>(ctx: &Ctx<S>) -> bullmq::JobId {
    ctx.add_with("later", JobOptions::new().delay(Duration::from_secs(3600)))
        .await
}

/// Publishes a custom `the-end` event, then reads `sub` until it: every event published before.
pub(crate) async fn collect_until_the_end<S: Store>(
    ctx: &Ctx<S>,
    sub: &mut bullmq::EventSubscription,
) -> Vec<std::sync::Arc<bullmq::ReceivedEvent>> {
    QueueEventsProducer::new(ctx.backend().await)
        .publish_event("the-end", &[])
        .await
        .unwrap();
    collect_until(sub, "the-end").await
}

pub async fn reader_sees_the_job_lifecycle_in_order<S: Store>() {
    let ctx = Ctx::<S>::new("lifecycle").await;
    let events = reader(&ctx).await;
    let mut sub = events.subscribe();
    let id = ctx.add_with("e", JobOptions::new()).await;
    let worker = ctx
        .worker(fast(), |job, _| async move {
            job.update_progress(&json!(10)).await?;
            Ok(json!({"done": true}))
        })
        .await;
    let mut names = Vec::new();
    let mut last_id = None;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !names.contains(&"completed") {
        let item = tokio::time::timeout_at(deadline, sub.recv())
            .await
            .expect("events in time")
            .expect("subscription open");
        let EventItem::Event(event) = item else {
            continue;
        };
        // Ids only grow.
        if let Some(previous) = last_id.replace(event.id.clone()) {
            assert!(previous < event.id || previous.as_str().len() < event.id.as_str().len());
        }
        match &event.event {
            QueueEvent::Added { job_id, .. } => {
                assert_eq!(*job_id, id);
                names.push("added");
            }
            QueueEvent::Waiting { job_id, .. } if *job_id == id => names.push("waiting"),
            QueueEvent::Active { job_id, .. } if *job_id == id => names.push("active"),
            QueueEvent::Progress { job_id, data } if *job_id == id => {
                assert_eq!(*data, json!(10));
                names.push("progress");
            }
            QueueEvent::Completed { job_id, .. } if *job_id == id => {
                assert_eq!(
                    event
                        .field("returnvalue")
                        .map(|v| serde_json::from_str::<serde_json::Value>(v).unwrap()),
                    Some(json!({"done": true}))
                );
                names.push("completed");
            }
            _ => {}
        }
    }
    assert_eq!(
        names,
        ["added", "waiting", "active", "progress", "completed"]
    );
    worker.close().await;
    events.close().await;
}

pub async fn custom_events_round_trip<S: Store>() {
    let ctx = Ctx::<S>::new("custom").await;
    let events = reader(&ctx).await;
    let mut sub = events.subscribe();
    let producer = QueueEventsProducer::new(ctx.backend().await);
    producer
        .publish_event("deploy", &[("version", "1.2.3")])
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let item = tokio::time::timeout_at(deadline, sub.recv())
            .await
            .expect("the custom event in time")
            .expect("subscription open");
        if let EventItem::Event(event) = item {
            assert_eq!(event.fields[0], ("event".to_owned(), "deploy".to_owned()));
            assert_eq!(event.field("version"), Some("1.2.3"));
            break;
        }
    }
    // A custom event cannot hide its name or be unnamed; a stream capped at 0 is refused.
    assert_bad_custom_events_refused(&producer).await;
    events.close().await;
}

/// Events until (and with) the first one named `stop`.
pub(crate) async fn collect_until(
    sub: &mut bullmq::EventSubscription,
    stop: &str,
) -> Vec<std::sync::Arc<bullmq::ReceivedEvent>> {
    crate::support::events::collect_until(sub, stop, WAIT)
        .await
        .0
}

pub async fn reading_from_an_id_replays_what_followed_it<S: Store>() {
    let ctx = Ctx::<S>::new("replay").await;
    let producer = QueueEventsProducer::new(ctx.backend().await);
    let mut ids = Vec::new();
    for i in 0..5 {
        let n = i.to_string();
        ids.push(producer.publish_event("tick", &[("n", &n)]).await.unwrap());
    }
    // A reader from now sees none of them; one from the second id sees the last three.
    let latest = reader(&ctx).await;
    let mut latest_sub = latest.subscribe();
    let manual = QueueEvents::new(
        ctx.backend().await,
        QueueEventsOptions::new()
            .autorun(false)
            .last_event_id(ids[1].clone()),
    )
    .unwrap();
    assert!(!manual.is_running());
    let mut sub = manual.subscribe();
    let runner = async { manual.run().await.unwrap() };
    let check = async {
        producer.publish_event("stop", &[]).await.unwrap();
        let got = collect_until(&mut sub, "stop").await;
        let ns: Vec<Option<&str>> = got.iter().map(|e| e.field("n")).collect();
        assert_eq!(ns, [Some("2"), Some("3"), Some("4"), None]);
        assert_eq!(got[0].id, ids[2]);
        manual.close().await;
    };
    tokio::join!(runner, check);
    let got = collect_until(&mut latest_sub, "stop").await;
    assert_eq!(
        got.len(),
        1,
        "a reader from now sees only later events: {got:#?}"
    );
    assert!(!manual.is_running());
    assert!(
        manual.run().await.is_err(),
        "a closed reader does not run again"
    );
    latest.close().await;
}

pub async fn a_new_reader_resumes_where_the_last_stopped<S: Store>() {
    let ctx = Ctx::<S>::new("resume").await;
    let producer = QueueEventsProducer::new(ctx.backend().await);
    let first = reader(&ctx).await;
    let mut sub = first.subscribe().only(&["tick", "pause-here"]);
    for i in 0..10 {
        let n = i.to_string();
        producer.publish_event("tick", &[("n", &n)]).await.unwrap();
    }
    producer.publish_event("pause-here", &[]).await.unwrap();
    let seen = collect_until(&mut sub, "pause-here").await;
    assert_eq!(seen.len(), 11);
    let resume_from = seen.last().unwrap().id.clone();
    first.close().await;
    assert!(!first.is_running());
    // Published while nobody reads, and jobs added meanwhile.
    for i in 10..20 {
        let n = i.to_string();
        producer.publish_event("tick", &[("n", &n)]).await.unwrap();
    }
    let job = ctx.add_with("meanwhile", JobOptions::new()).await;
    producer.publish_event("stop", &[]).await.unwrap();
    let second = QueueEvents::new(
        ctx.backend().await,
        QueueEventsOptions::new()
            .autorun(false)
            .last_event_id(resume_from),
    )
    .unwrap();
    let mut sub = second.subscribe();
    let runner = async { second.run().await.unwrap() };
    let check = async {
        let got = collect_until(&mut sub, "stop").await;
        let ns = numbered(&got, "n");
        assert_eq!(
            ns,
            (10..20).collect::<Vec<_>>(),
            "every event once, in order"
        );
        assert!(got.iter().any(|e| e.event
            == QueueEvent::Added {
                job_id: job.clone(),
                name: "meanwhile".into()
            }));
        assert_eq!(second.last_event_id(), Some(got.last().unwrap().id.clone()));
        second.close().await;
    };
    tokio::join!(runner, check);
}

pub async fn wait_until_finished_answers_each_outcome<S: Store>() {
    let ctx = Ctx::<S>::new("wait-finished").await;
    let events = std::sync::Arc::new(reader(&ctx).await);
    let ok = ctx.add("ok", json!({"i": 21}), JobOptions::new()).await;
    let fail = ctx.add_with("fail", JobOptions::new()).await;
    let waiting = {
        let events = events.clone();
        let (ok, fail) = (ok.clone(), fail.clone());
        tokio::spawn(async move {
            let ttl = Some(WAIT);
            (
                events.wait_until_finished(&ok, ttl).await,
                events.wait_until_finished(&fail, ttl).await,
            )
        })
    };
    // No pause before the worker starts: a wait listens before it reads the job's state, so
    // it sees a finish whether it began before it or after.
    let worker = ctx
        .worker(fast(), |job, _| async move {
            match job.name.as_str() {
                "ok" => Ok(json!({"double": 42})),
                _ => Err(bullmq::JobError::failed("boom 3")),
            }
        })
        .await;
    let (completed, failed) = waiting.await.unwrap();
    assert_eq!(completed.unwrap(), json!({"double": 42}));
    match failed {
        Err(WaitError::Failed { job_id, reason }) => {
            assert_eq!((job_id, reason.as_str()), (fail.clone(), "boom 3"));
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    worker.close().await;
    // Already finished: answered from the job's state (no event will come for it).
    let again = ctx
        .queue
        .job(ok.clone())
        .wait_until_finished(&events, Some(Duration::from_secs(5)))
        .await;
    assert_eq!(again.unwrap(), json!({"double": 42}));
    let err = events.wait_until_finished(&fail, None).await.unwrap_err();
    assert!(matches!(err, WaitError::Failed { .. }), "{err:?}");
    assert_eq!(err.to_string(), format!("job {fail} failed: boom 3"));
    // Never processed: the ttl runs out. Missing: not found.
    let idle = ctx.add_with("idle", JobOptions::new()).await;
    let started = std::time::Instant::now();
    let timed_out = events
        .wait_until_finished(&idle, Some(Duration::from_millis(300)))
        .await;
    assert!(matches!(timed_out, Err(WaitError::TimedOut { ref job_id, .. }) if *job_id == idle));
    assert!(started.elapsed() >= Duration::from_millis(300));
    let missing = events.wait_until_finished(&"nope".into(), None).await;
    assert!(
        matches!(missing, Err(WaitError::NotFound { .. })),
        "{missing:?}"
    );
    // Closing the reader ends a wait, whether it already listens or is about to.
    let pending = {
        let events = events.clone();
        tokio::spawn(async move { events.wait_until_finished(&idle, None).await })
    };
    events.close().await;
    let closed = tokio::time::timeout(Duration::from_secs(3), pending)
        .await
        .expect("the wait ends when the reader closes")
        .unwrap();
    assert!(
        matches!(closed, Err(WaitError::Closed { .. })),
        "{closed:?}"
    );
}

pub async fn queue_and_worker_events_are_published<S: Store>() {
    let ctx = Ctx::<S>::new("every-event").await;
    let events = reader(&ctx).await;
    let mut sub = events.subscribe();
    let later = add_later(&ctx).await;
    let later_job = ctx.job(&later).await;
    ctx.add_with("dup", JobOptions::new().job_id("dup-1")).await;
    ctx.add_with("dup", JobOptions::new().job_id("dup-1")).await;
    let dedup = JobOptions::new().deduplication(bullmq::Deduplication::new("d-1"));
    let kept = ctx.add_with("dedup", dedup.clone()).await;
    ctx.add_with("dedup", dedup).await;
    assert!(ctx.queue.remove(&later, false).await.unwrap());
    ctx.queue.pause().await.unwrap();
    ctx.queue.resume().await.unwrap();
    let retried = ctx
        .add_with(
            "fail",
            JobOptions::new()
                .attempts(2)
                .backoff(bullmq::Backoff::fixed(Duration::from_millis(50))),
        )
        .await;
    let worker = ctx
        .worker(fast(), |job, _| async move {
            match job.name.as_str() {
                "fail" => Err(bullmq::JobError::failed("boom")),
                _ => Ok(json!("ok")),
            }
        })
        .await;
    ctx.wait_state(&retried, bullmq::JobState::Failed).await;
    eventually("queue empty", WAIT, || async {
        ctx.queue.count().await.unwrap() == 0
    })
    .await;
    worker.close().await;
    let cleaned = ctx
        .queue
        .clean(Duration::ZERO, 0, bullmq::JobState::Completed)
        .await
        .unwrap();
    assert_eq!(cleaned.len(), 2);
    let seen = collect_until_the_end(&ctx, &mut sub).await;
    let has = |e: &QueueEvent| seen.iter().any(|s| s.event == *e);
    assert!(
        seen.iter()
            .any(|e| matches!(&e.event, QueueEvent::Delayed { job_id, delay }
            if *job_id == later && *delay == later_job.timestamp + 3_600_000)),
        "{seen:#?}"
    );
    assert!(has(&QueueEvent::Duplicated {
        job_id: "dup-1".into()
    }));
    let deduplicated: Vec<_> = seen
        .iter()
        .filter(|e| {
            matches!(&e.event, QueueEvent::Deduplicated { job_id, deduplication_id, .. }
            if *job_id == kept && deduplication_id == "d-1")
        })
        .collect();
    assert_eq!(deduplicated.len(), 1, "{seen:#?}");
    let position = |e: &QueueEvent| seen.iter().position(|s| s.event == *e);
    assert!(position(&QueueEvent::Paused).unwrap() < position(&QueueEvent::Resumed).unwrap());
    let fail_events: Vec<&QueueEvent> = seen
        .iter()
        .map(|e| &e.event)
        .filter(|e| e.job_id() == Some(retried.as_str()))
        .collect();
    assert!(
        fail_events
            .iter()
            .any(|e| matches!(e, QueueEvent::Delayed { .. })),
        "the retry waits its backoff: {fail_events:#?}"
    );
    assert!(fail_events.contains(&&QueueEvent::Failed {
        job_id: retried.clone(),
        failed_reason: "boom".into(),
        prev: Some("active".into()),
    }));
    assert!(fail_events.contains(&&QueueEvent::RetriesExhausted {
        job_id: retried.clone(),
        attempts_made: 2,
    }));
    assert!(has(&QueueEvent::Completed {
        job_id: kept.clone(),
        returnvalue: json!("ok"),
        prev: Some("active".into()),
    }));
    assert!(has(&QueueEvent::Drained));
    assert!(has(&QueueEvent::Cleaned { count: 2 }));
    assert!(
        seen.iter()
            .all(|e| !matches!(e.event, QueueEvent::Malformed { .. })),
        "{seen:#?}"
    );
    events.close().await;
}

pub async fn subscriptions_filter_by_name_and_job<S: Store>() {
    let ctx = Ctx::<S>::new("filters").await;
    let events = reader(&ctx).await;
    let mut by_name = events.subscribe().only(&["completed", "stop"]);
    let b = bullmq::JobId::from("job-b");
    let mut by_job = events.subscribe().for_job(&b);
    let a = ctx.add_with("a", JobOptions::new()).await;
    assert_eq!(
        ctx.add_with("b", JobOptions::new().job_id("job-b")).await,
        b
    );
    let worker = ctx
        .worker(fast(), |job, _| async move { Ok(json!(job.name)) })
        .await;
    ctx.wait_state(&a, bullmq::JobState::Completed).await;
    ctx.wait_state(&b, bullmq::JobState::Completed).await;
    worker.close().await;
    let producer = QueueEventsProducer::new(ctx.backend().await);
    producer
        .publish_event("stop", &[("jobId", b.as_str())])
        .await
        .unwrap();
    let got = collect_until(&mut by_name, "stop").await;
    let names: Vec<&str> = got.iter().map(|e| e.event.name()).collect();
    assert_eq!(names, ["completed", "completed", "stop"]);
    let got = collect_until(&mut by_job, "stop").await;
    assert!(
        got.iter().all(|e| e.event.job_id() == Some(b.as_str())),
        "{got:#?}"
    );
    let names: Vec<&str> = got.iter().map(|e| e.event.name()).collect();
    assert_eq!(names, ["added", "waiting", "active", "completed", "stop"]);
    events.close().await;
}

pub async fn close_stops_a_reader_promptly<S: Store>() {
    let ctx = Ctx::<S>::new("close-reader").await;
    let events = reader(&ctx).await;
    assert!(events.is_running());
    let mut sub = events.subscribe();
    // The reader is ready, so blocked (or about to be) in a read of up to 10 s: `close`
    // interrupts it instead of waiting for that read to end.
    tokio::time::timeout(Duration::from_secs(8), events.close())
        .await
        .expect("close interrupts the blocked read");
    assert!(!events.is_running());
    assert!(sub.recv().await.is_none(), "subscriptions end");
    assert!(events.subscribe().recv().await.is_none());
    assert!(events.wait_until_ready().await.is_err());
    // The queue's own backend stays usable.
    ctx.add_with("after", JobOptions::new()).await;
    // Options are validated.
    let Err(err) = QueueEvents::new(
        ctx.backend().await,
        QueueEventsOptions::new().blocking_timeout(Duration::ZERO),
    ) else {
        panic!("a zero blocking timeout is refused");
    };
    assert!(err.to_string().contains("blocking_timeout"), "{err}");
}

pub async fn stalled_progress_and_waiting_children_events<S: Store>() {
    let ctx = Ctx::<S>::new("more-events").await;
    let events = reader(&ctx).await;
    let mut sub = events.subscribe();
    let added = bullmq::flow::FlowProducer::new(ctx.backend().await)
        .add(
            bullmq::flow::FlowJob::new(ctx.name.clone(), "parent", json!({})).child(
                bullmq::flow::FlowJob::new(ctx.name.clone(), "child", json!({})),
            ),
        )
        .await
        .unwrap();
    let child = added.children[0].job.id.clone();
    // The child is taken by a worker that crashes, then recovered by one that reports progress.
    assert_eq!(
        ctx.take_for("crashed", Duration::from_millis(100)).await,
        Some(child.clone())
    );
    // Waits for the 100 ms lock to expire on the server.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let opts = fast().stalled_interval(Duration::from_millis(100));
    let worker = ctx
        .worker(opts, |job, _| async move {
            job.update_progress(&json!({"pct": 50})).await?;
            Ok(json!(job.name))
        })
        .await;
    ctx.wait_state(&added.job.id, bullmq::JobState::Completed)
        .await;
    worker.close().await;
    let seen = collect_until_the_end(&ctx, &mut sub).await;
    let has = |e: &QueueEvent| seen.iter().any(|s| s.event == *e);
    assert!(
        seen.iter().any(
            |e| matches!(&e.event, QueueEvent::WaitingChildren { job_id, .. }
            if *job_id == added.job.id)
        ),
        "{seen:#?}"
    );
    assert!(
        has(&QueueEvent::Stalled {
            job_id: child.clone()
        }),
        "{seen:#?}"
    );
    assert!(has(&QueueEvent::Progress {
        job_id: child.clone(),
        data: json!({"pct": 50})
    }));
    // The parent is released once its child completed.
    let released = seen.iter().position(
        |e| matches!(&e.event, QueueEvent::Waiting { job_id, .. } if *job_id == added.job.id),
    );
    let child_done = seen
        .iter()
        .position(|e| matches!(&e.event, QueueEvent::Completed { job_id, .. } if *job_id == child));
    assert!(released.is_some() && child_done.is_some(), "{seen:#?}");
    assert!(has(&QueueEvent::Completed {
        job_id: added.job.id.clone(),
        returnvalue: json!("parent"),
        prev: Some("active".into()),
    }));
    events.close().await;
}
