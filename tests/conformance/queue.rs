//! The producer and admin side: adding, reading, counting, pausing, removing.

use std::time::Duration;

use bullmq::backend::{Lifecycle, Range};
use bullmq::job::JobType;
use bullmq::{BulkJob, Deduplication, Error, JobOptions, JobState, ParentOptions, ScriptErrorCode};
use serde_json::json;

use crate::ctx::{Ctx, WAIT, dedup_on};
use crate::store::Store;
use crate::support::eventually;
use crate::support::waiting::waiting_names;

pub async fn adds_and_reads_back_a_job<S: Store>() {
    let ctx = Ctx::<S>::new("read-back").await;
    let opts = JobOptions::new()
        .attempts(3)
        .priority(4)
        .remove_on_fail(bullmq::KeepJobs::Number(10));
    let added = ctx
        .queue
        .add("email", &json!({"to": "a@b.c", "n": [1, 2]}), opts)
        .await
        .unwrap();
    let job = ctx.job(&added.id).await;
    assert_eq!(job.name, "email");
    assert_eq!(
        job.data_as::<serde_json::Value>().unwrap(),
        json!({"to": "a@b.c", "n": [1, 2]})
    );
    assert_eq!(job.opts.attempts, Some(3));
    assert_eq!(job.opts.priority, Some(4));
    assert_eq!(job.priority, 4);
    assert_eq!(job.timestamp, added.timestamp);
    assert_eq!(ctx.state(&added.id).await, Some(JobState::Prioritized));
    assert_eq!(ctx.queue.count().await.unwrap(), 1);
    assert!(
        ctx.queue
            .get_job(&"missing".into())
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(ctx.state(&"missing".into()).await, None);
}

pub async fn add_bulk_keeps_order_and_counts<S: Store>() {
    let ctx = Ctx::<S>::new("bulk").await;
    // More than one write batch (Redis sends 128 adds a round trip).
    let jobs = (0..250)
        .map(|i| BulkJob {
            name: format!("j{i}"),
            data: json!({ "i": i }),
            opts: JobOptions::new(),
        })
        .collect();
    let added = ctx.queue.add_bulk(jobs).await.unwrap();
    let ids: Vec<String> = added.iter().map(|j| j.id.to_string()).collect();
    let expected: Vec<String> = (1..=250).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected, "generated ids follow the input order");
    let seventh = ctx.job(&"7".into()).await;
    assert_eq!(
        (
            seventh.name.as_str(),
            seventh.data_as::<serde_json::Value>().unwrap()
        ),
        ("j6", json!({"i": 6}))
    );
    let counts = ctx
        .queue
        .get_job_counts(&[JobType::Wait, JobType::State(JobState::Delayed)])
        .await
        .unwrap();
    assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), 250);
    assert_eq!(counts[0].1, 250);
    // Newest first by default, oldest first with `asc`.
    for (end, asc, expected) in [
        (2, false, &["j249", "j248", "j247"][..]),
        (1, true, &["j0", "j1"][..]),
    ] {
        let range = Range { start: 0, end, asc };
        let listed = ctx.queue.get_waiting(range).await.unwrap();
        let names: Vec<_> = listed.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, expected, "asc {asc}");
    }
}

/// Job `i` of the bulk of [`add_bulk_names_what_was_added_when_a_job_is_refused`].
fn bulk_job(i: usize, opts: JobOptions) -> BulkJob<serde_json::Value> {
    BulkJob {
        name: format!("j{i}"),
        data: json!({ "i": i }),
        opts,
    }
}

pub async fn add_bulk_names_what_was_added_when_a_job_is_refused<S: Store>() {
    let ctx = Ctx::<S>::new("bulk-refused").await;
    let queue_key = ctx.queue.backend().qualified_name().to_owned();
    ctx.add_with("p", JobOptions::new().job_id("parent")).await;
    // Job 1 has a parent that exists, job 3 one that does not: the store refuses job 3 alone.
    let missing = || {
        JobOptions::new()
            .parent(ParentOptions::new("later", queue_key.clone()))
            .fail_parent_on_failure(true)
    };
    let opts = |i: usize| match i {
        1 => JobOptions::new().parent(ParentOptions::new("parent", queue_key.clone())),
        3 => missing(),
        _ => JobOptions::new(),
    };
    let bulk: Vec<_> = (0..6).map(|i| bulk_job(i, opts(i))).collect();
    let Err(Error::Bulk(failed)) = ctx.queue.add_bulk(bulk).await else {
        panic!("job 3 is refused")
    };
    let added: Vec<usize> = failed.added.iter().map(|a| a.index).collect();
    assert_eq!(
        added,
        [0, 1, 2, 4, 5],
        "the jobs after the refused one are added too"
    );
    for a in &failed.added {
        assert_eq!(ctx.job(&a.id).await.name, format!("j{}", a.index));
    }
    assert_eq!(failed.refused.len(), 1, "{failed}");
    assert_eq!(failed.refused[0].index, Some(3));
    let Error::Script(refusal) = &failed.refused[0].error else {
        panic!("{failed}")
    };
    assert_eq!(refusal.code, ScriptErrorCode::ParentNotFound);
    assert!(failed.unknown.is_none());
    assert_eq!(failed.to_retry(), [3]);
    let message = failed.to_string();
    assert!(
        message.starts_with("added 5 of 6 jobs; job 3 was refused (Missing key for parent job"),
        "{message}"
    );
    assert!(
        message.contains("retry only the jobs at indices 3"),
        "{message}"
    );

    // Once the parent exists, retrying what `to_retry` names adds each job exactly once.
    ctx.add_with("p", JobOptions::new().job_id("later")).await;
    let retry: Vec<_> = failed
        .to_retry()
        .into_iter()
        .map(|i| bulk_job(i, opts(i)))
        .collect();
    let retried = ctx.queue.add_bulk(retry).await.unwrap();
    assert_eq!(retried.len(), 1);
    let names = waiting_names(&ctx.queue).await;
    assert_eq!(names, ["j0", "j1", "j2", "j3", "j4", "j5", "p", "p"]);

    // A job that fails its checks is named by its index, and nothing of the bulk is written.
    let bulk = vec![
        bulk_job(6, JobOptions::new()),
        bulk_job(7, JobOptions::new().priority(u32::MAX)),
    ];
    let Err(Error::Bulk(failed)) = ctx.queue.add_bulk(bulk).await else {
        panic!("job 1 is invalid")
    };
    assert!(failed.added.is_empty());
    assert_eq!(failed.refused[0].index, Some(1));
    assert!(
        matches!(failed.refused[0].error, Error::Invalid(_)),
        "{failed}"
    );
    assert_eq!(failed.to_retry(), [0, 1]);
    let counts = ctx.queue.get_job_counts(&[]).await.unwrap();
    assert_eq!(counts.iter().map(|c| c.1).sum::<u64>(), 8, "{counts:?}");
}

pub async fn custom_ids_are_not_added_twice<S: Store>() {
    let ctx = Ctx::<S>::new("custom-id").await;
    let first = ctx
        .add("a", json!({"v": 1}), JobOptions::new().job_id("order-7"))
        .await;
    let second = ctx
        .add("a", json!({"v": 2}), JobOptions::new().job_id("order-7"))
        .await;
    assert_eq!(first.as_str(), "order-7");
    assert_eq!(second, first);
    assert_eq!(ctx.queue.count().await.unwrap(), 1);
    assert_eq!(ctx.job(&first).await.data, r#"{"v":1}"#);
}

pub async fn delayed_jobs_wait_then_promote<S: Store>() {
    let ctx = Ctx::<S>::new("delayed").await;
    let id = ctx
        .add_with("later", JobOptions::new().delay(Duration::from_secs(60)))
        .await;
    assert_eq!(ctx.state(&id).await, Some(JobState::Delayed));
    assert_eq!(ctx.job(&id).await.delay, Duration::from_secs(60));
    assert_eq!(ctx.queue.get_delayed_count(None).await.unwrap(), 1);
    ctx.queue.job(id.clone()).promote().await.unwrap();
    assert_eq!(ctx.state(&id).await, Some(JobState::Waiting));
    // Promoting a job that is not delayed is refused with upstream's code.
    let err = ctx.queue.job(id.clone()).promote().await.unwrap_err();
    assert!(
        matches!(&err, bullmq::Error::Script(e) if e.code == bullmq::ScriptErrorCode::NotInState),
        "{err}"
    );
}

pub async fn pause_resume_and_drain<S: Store>() {
    let ctx = Ctx::<S>::new("pause").await;
    ctx.add_numbered("w", 3).await;
    ctx.add_with("d", JobOptions::new().delay(Duration::from_secs(60)))
        .await;
    assert!(!ctx.queue.is_paused().await.unwrap());
    ctx.queue.pause().await.unwrap();
    assert!(ctx.queue.is_paused().await.unwrap());
    ctx.queue.resume().await.unwrap();
    assert!(!ctx.queue.is_paused().await.unwrap());
    ctx.queue.drain(false).await.unwrap();
    assert_eq!(
        ctx.queue
            .get_job_count_by_types(&[JobType::Wait])
            .await
            .unwrap(),
        0
    );
    assert_eq!(ctx.queue.get_delayed_count(None).await.unwrap(), 1);
    ctx.queue.drain(true).await.unwrap();
    assert_eq!(ctx.queue.count().await.unwrap(), 0);
}

/// Pausing only sets a flag: the waiting jobs stay waiting and are counted so, by type and
/// in `count()`. (Upstream's PostgreSQL `get_counts` reported them as `paused` until 6.7.6.)
pub async fn a_paused_queue_still_counts_its_waiting_jobs<S: Store>() {
    let ctx = Ctx::<S>::new("paused-count").await;
    ctx.queue.pause().await.unwrap();
    let id = ctx.add_with("p", JobOptions::new()).await;
    assert_eq!(ctx.state(&id).await, Some(JobState::Waiting));
    assert_eq!(ctx.queue.count().await.unwrap(), 1);
    assert_eq!(ctx.count_in(JobState::Waiting).await, 1);
    assert_eq!(
        ctx.queue
            .get_job_count_by_types(&[JobType::Wait])
            .await
            .unwrap(),
        1
    );
}

pub async fn remove_clean_and_obliterate<S: Store>() {
    let ctx = Ctx::<S>::new("remove").await;
    let a = ctx.add_with("a", JobOptions::new()).await;
    let b = ctx.add_with("b", JobOptions::new()).await;
    assert!(ctx.queue.remove(&a, false).await.unwrap());
    assert!(ctx.queue.get_job(&a).await.unwrap().is_none());
    // Waits for `b` to age past the zero grace (clean takes jobs older than the server's now).
    tokio::time::sleep(Duration::from_millis(20)).await;
    let cleaned = ctx
        .queue
        .clean(Duration::ZERO, 100, JobState::Waiting)
        .await
        .unwrap();
    assert_eq!(cleaned, std::slice::from_ref(&b));
    ctx.add_with("c", JobOptions::new()).await;
    // As in Node.js, obliterate pauses the queue itself, then removes everything.
    ctx.queue.obliterate(false, 1000).await.unwrap();
    assert_eq!(ctx.queue.count().await.unwrap(), 0);
    assert!(ctx.queue.get_job(&b).await.unwrap().is_none());
}

pub async fn progress_logs_and_data_updates<S: Store>() {
    let ctx = Ctx::<S>::new("mutations").await;
    let id = ctx.add("m", json!({"v": 1}), JobOptions::new()).await;
    let job = ctx.queue.job(id.clone());
    job.update_progress(&json!({"pct": 30})).await.unwrap();
    job.update_data(&json!({"v": 2})).await.unwrap();
    assert_eq!(job.log("first").await.unwrap(), 1);
    assert_eq!(job.log("second").await.unwrap(), 2);
    let read = ctx.job(&id).await;
    assert_eq!(read.progress, json!({"pct": 30}));
    assert_eq!(
        read.data_as::<serde_json::Value>().unwrap(),
        json!({"v": 2})
    );
    let logs = ctx
        .queue
        .get_job_logs(&id, Range::ALL_OLDEST_FIRST)
        .await
        .unwrap();
    assert_eq!(logs.logs, ["first", "second"]);
    assert_eq!(logs.count, 2);
    job.change_priority(7, false).await.unwrap();
    assert_eq!(ctx.job(&id).await.priority, 7);
    assert_eq!(ctx.state(&id).await, Some(JobState::Prioritized));
}

pub async fn deduplication_keeps_one_job<S: Store>() {
    let ctx = Ctx::<S>::new("dedup").await;
    let opts = || dedup_on("user-9");
    let first = ctx.add("d", json!({"n": 1}), opts()).await;
    let second = ctx.add("d", json!({"n": 2}), opts()).await;
    assert_eq!(second, first);
    assert_eq!(ctx.queue.count().await.unwrap(), 1);
    assert_eq!(
        ctx.queue.get_deduplication_job_id("user-9").await.unwrap(),
        Some(first.clone())
    );
    assert!(ctx.queue.remove_deduplication_key("user-9").await.unwrap());
    let third = ctx.add("d", json!({"n": 3}), opts()).await;
    assert_ne!(third, first);
    eventually("two jobs", WAIT, || async {
        ctx.queue.count().await.unwrap() == 2
    })
    .await;
}

pub async fn get_jobs_lists_every_state<S: Store>() {
    let ctx = Ctx::<S>::new("getters").await;
    let token = bullmq::backend::LockToken::new("t");
    let mut taken = Vec::new();
    for name in ["done", "fail", "run"] {
        ctx.add_with(name, JobOptions::new()).await;
        taken.push(ctx.take("t").await);
    }
    let (done, fail) = (taken[0].clone(), taken[1].clone());
    ctx.queue
        .job(done.clone())
        .move_to_completed(&1, &token, false)
        .await
        .unwrap();
    ctx.queue
        .job(fail.clone())
        .move_to_failed(&bullmq::JobFailure::new("no"), &token, false)
        .await
        .unwrap();
    let wait = ctx.add_with("wait", JobOptions::new()).await;
    let prio = ctx.add_with("prio", JobOptions::new().priority(2)).await;
    let delayed = ctx
        .add_with("delayed", JobOptions::new().delay(Duration::from_secs(60)))
        .await;
    let ids = |jobs: Vec<bullmq::Job>| -> Vec<String> {
        let mut v: Vec<String> = jobs.into_iter().map(|j| j.id.to_string()).collect();
        v.sort();
        v
    };
    let all = Range::ALL;
    let q = &ctx.queue;
    for (getter, listed, expected) in [
        ("get_waiting", q.get_waiting(all).await, &wait),
        ("get_prioritized", q.get_prioritized(all).await, &prio),
        ("get_delayed", q.get_delayed(all).await, &delayed),
        ("get_active", q.get_active(all).await, &taken[2]),
        ("get_completed", q.get_completed(all).await, &done),
        ("get_failed", q.get_failed(all).await, &fail),
    ] {
        assert_eq!(ids(listed.unwrap()), [expected.to_string()], "{getter}");
    }
    assert!(
        ctx.queue
            .get_waiting_children(all)
            .await
            .unwrap()
            .is_empty()
    );
    let types = [
        JobType::Wait,
        JobType::State(JobState::Completed),
        JobType::State(JobState::Failed),
    ];
    let mut expected = vec![wait.to_string(), done.to_string(), fail.to_string()];
    expected.sort();
    let got = ids(ctx.queue.get_jobs(&types, all).await.unwrap());
    assert_eq!(got, expected);
    let counts = ctx.queue.get_job_counts(&[]).await.unwrap();
    let count = |state: &str| {
        counts
            .iter()
            .find(|(t, _)| t.as_str() == state)
            .map_or_else(|| panic!("no {state} in {counts:?}"), |(_, n)| *n)
    };
    for (state, n) in [
        ("waiting", 1),
        ("prioritized", 1),
        ("delayed", 1),
        ("active", 1),
        ("completed", 1),
        ("failed", 1),
        ("waiting-children", 0),
    ] {
        assert_eq!(count(state), n, "{state}");
    }
    assert_eq!(
        ctx.queue.count().await.unwrap(),
        3,
        "waiting + prioritized + delayed"
    );
}

pub async fn counts_per_priority<S: Store>() {
    let ctx = Ctx::<S>::new("per-priority").await;
    for p in [0, 0, 1, 3, 3, 3] {
        let opts = if p == 0 {
            JobOptions::new()
        } else {
            JobOptions::new().priority(p)
        };
        ctx.add_with("p", opts).await;
    }
    let counts = ctx
        .queue
        .get_counts_per_priority(&[0, 1, 2, 3])
        .await
        .unwrap();
    assert_eq!(counts, [(0, 2), (1, 1), (2, 0), (3, 3)]);
    ctx.queue.pause().await.unwrap();
    let counts = ctx.queue.get_counts_per_priority(&[0, 3]).await.unwrap();
    assert_eq!(
        counts,
        [(0, 2), (3, 3)],
        "a paused queue counts its paused jobs"
    );
}

pub async fn invalid_options_are_refused_before_any_write<S: Store>() {
    let ctx = Ctx::<S>::new("refuse").await;
    let mut refused = vec![
        (JobOptions::new().priority(3_000_000), "priority"),
        // Node.js's limit is 2^21 - 1.
        (JobOptions::new().priority(2_097_152), "priority"),
        (JobOptions::new().size_limit(4), "sizeLimit"),
    ];
    // Upstream refuses `0`, integer-like ids (the generated ones) and ids with a `:` outside
    // its three-part `repeat:<scheduler>:<millis>` form.
    for bad in ["42", "-4", "0", ":", "a:b", "a:b:c:d"] {
        refused.push((JobOptions::new().job_id(bad), "jobId"));
    }
    for (opts, path) in refused {
        let err = ctx
            .queue
            .add("x", &json!({"too": "big"}), opts)
            .await
            .unwrap_err();
        match &err {
            bullmq::Error::Invalid(e) => assert_eq!(e.problems()[0].path, path, "{err}"),
            other => panic!("expected a validation error, got {other}"),
        }
        if path == "sizeLimit" {
            assert!(err.to_string().contains("limit of 4"), "{err}");
        }
    }
    assert_eq!(ctx.queue.count().await.unwrap(), 0);
    // The first job still gets the first generated id: no counter moved.
    assert_eq!(ctx.add_with("x", JobOptions::new()).await.as_str(), "1");
    // At the limit exactly is fine.
    ctx.add("ok", json!("12345678"), JobOptions::new().size_limit(10))
        .await;
}

pub async fn odd_custom_ids_round_trip<S: Store>() {
    let ctx = Ctx::<S>::new("odd-ids").await;
    // An empty id means "no custom id" (Node.js tests `if (opts.jobId)`): the store
    // generates one.
    let generated = ctx.add_with("x", JobOptions::new().job_id("")).await;
    assert_eq!(generated.as_str(), "1");
    let long = "k".repeat(1024);
    let odd = [
        "0123",
        long.as_str(),
        "tâche-✓-日本語-\u{1F680}",
        "repeat:s:1",
        "with space",
    ];
    for id in odd {
        let added = ctx
            .queue
            .add("odd", &json!({ "id": id }), JobOptions::new().job_id(id))
            .await
            .unwrap_or_else(|e| panic!("{id:?}: {e}"));
        assert_eq!(added.id.as_str(), id);
        let job = ctx.job(&bullmq::JobId::from(id)).await;
        assert_eq!(job.id.as_str(), id);
        assert_eq!(
            job.data_as::<serde_json::Value>().unwrap(),
            json!({ "id": id })
        );
        assert_eq!(
            ctx.state(&bullmq::JobId::from(id)).await,
            Some(JobState::Waiting)
        );
    }
    assert_eq!(
        ctx.queue.get_waiting(Range::ALL).await.unwrap().len(),
        odd.len() + 1
    );
}

pub async fn default_job_options_apply_under_a_jobs_own<S: Store>() {
    let ctx = Ctx::<S>::new("defaults").await;
    let queue = bullmq::Queue::try_new(ctx.name.clone(), ctx.backend().await)
        .expect("the backend is bound to this queue")
        .default_job_options(
            JobOptions::new()
                .attempts(5)
                .priority(4)
                .remove_on_complete(bullmq::KeepJobs::RemoveAll),
        );
    let job = queue
        .add("x", &json!({}), JobOptions::new().attempts(2))
        .await
        .unwrap();
    let read = ctx.job(&job.id).await;
    // The job's own options over the defaults, and nothing else stored.
    assert_eq!(
        read.opts,
        JobOptions::new()
            .attempts(2)
            .priority(4)
            .remove_on_complete(bullmq::KeepJobs::RemoveAll)
    );
    assert_eq!(ctx.state(&job.id).await, Some(JobState::Prioritized));
}

pub async fn lifo_jobs_go_first<S: Store>() {
    let ctx = Ctx::<S>::new("lifo").await;
    let a = ctx.add_with("a", JobOptions::new()).await;
    let b = ctx.add_with("b", JobOptions::new().lifo(true)).await;
    let c = ctx.add_with("c", JobOptions::new()).await;
    assert_eq!(ctx.take("t").await, b);
    assert_eq!(ctx.take("t").await, a);
    assert_eq!(ctx.take("t").await, c);
}

pub async fn duplicates_and_deduplication_ttl<S: Store>() {
    let ctx = Ctx::<S>::new("dedup-ttl").await;
    let opts = || {
        JobOptions::new().deduplication(Deduplication::new("d1").ttl(Duration::from_millis(400)))
    };
    let first = ctx.add("d", json!(1), opts()).await;
    let second = ctx.add("d", json!(2), opts()).await;
    assert_eq!(first, second);
    // Past the ttl a new job is added although the first still waits.
    // Waits for the 400 ms deduplication ttl to expire on the server.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let third = ctx.add("d", json!(3), opts()).await;
    assert_ne!(third, first);
    assert_eq!(ctx.queue.count().await.unwrap(), 2);
    assert_eq!(
        ctx.queue.get_deduplication_job_id("d1").await.unwrap(),
        Some(third)
    );
}

pub async fn stored_options_round_trip<S: Store>() {
    let ctx = Ctx::<S>::new("options").await;
    let opts = JobOptions::new()
        .attempts(0)
        .backoff(bullmq::Backoff::custom("nope").delay(Duration::from_millis(10)))
        .lifo(true)
        .keep_logs(5)
        .stack_trace_limit(3)
        .size_limit(1000)
        .remove_on_complete(bullmq::KeepJobs::Policy {
            age: Some(Duration::from_secs(60)),
            count: Some(10),
            limit: Some(5),
        })
        .remove_on_fail(bullmq::KeepJobs::Number(7))
        .priority(9)
        .fail_parent_on_failure(true);
    let id = ctx.add_with("o", opts.clone()).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.opts.attempts, Some(0));
    assert_eq!(job.opts.backoff, opts.backoff);
    assert_eq!(job.opts.lifo, Some(true));
    assert_eq!(job.opts.keep_logs, Some(5));
    assert_eq!(job.opts.stack_trace_limit, Some(3));
    assert_eq!(job.opts.size_limit, Some(1000));
    assert_eq!(job.opts.remove_on_complete, opts.remove_on_complete);
    assert_eq!(job.opts.remove_on_fail, Some(bullmq::KeepJobs::Number(7)));
    assert_eq!((job.opts.priority, job.priority), (Some(9), 9));
    assert_eq!(job.opts.fail_parent_on_failure, Some(true));
    assert!(job.opts.extra.is_empty(), "{:?}", job.opts.extra);
    assert!(job.invalid_opts.is_empty(), "{:?}", job.invalid_opts);
}

pub async fn a_large_payload_round_trips<S: Store>() {
    let ctx = Ctx::<S>::new("large").await;
    // Mixed ASCII, escapes and multi-byte text, so a lossy step would show.
    let unit = "bullmq \"quoted\" \\ tâche ✓ 日本語 \u{1F680}\n";
    let text = unit.repeat(1024 * 1024 / unit.len() + 1);
    let payload = json!({ "blob": text, "n": 1.5, "big": 12_345_678_901_234_567_u64, "nested": [{"z": null, "a": true}] });
    let id = ctx.add("huge", payload.clone(), JobOptions::new()).await;
    let job = ctx.job(&id).await;
    assert_eq!(job.data_as::<serde_json::Value>().unwrap(), payload);
    let listed = ctx.queue.get_waiting(Range::ALL).await.unwrap();
    assert_eq!(listed[0].data_as::<serde_json::Value>().unwrap(), payload);
}
