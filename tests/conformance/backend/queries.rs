//! `Queries`: states, jobs, logs, counts, ranges and a parent's dependencies, on jobs made and
//! moved through the trait.

use std::time::Duration;

use bullmq_core::backend::{
    DependenciesQuery, DependencyKind, FinishStatus, JobLogs, JobMutations, Lifecycle, Queries,
    QueueMeta, Range,
};
use bullmq_core::job::JobType;
use bullmq_core::{Error, JobId, JobOptions, JobState, Queue};

use super::{Sec, T0, complete_on, fail_on, id};
use crate::store::Store;
use crate::support::DEPENDENCY_KINDS;

fn range(start: i64, end: i64, asc: bool) -> Range {
    Range { start, end, asc }
}

fn t(s: JobState) -> JobType {
    JobType::State(s)
}

fn ids(v: &[JobId]) -> Vec<&str> {
    v.iter().map(JobId::as_str).collect()
}

/// The jobs [`one_of_each`] makes, each with its state.
const ONE_OF_EACH: [(&str, JobState); 7] = [
    ("j-active", JobState::Active),
    ("j-completed", JobState::Completed),
    ("j-failed", JobState::Failed),
    ("j-waiting", JobState::Waiting),
    ("j-prioritized", JobState::Prioritized),
    ("j-delayed", JobState::Delayed),
    ("j-parent", JobState::WaitingChildren),
];

/// One job in every state: `j-active`, `j-completed` (`{"x":1}`), `j-failed` (`boom`),
/// `j-waiting`, `j-prioritized` (priority 3), `j-delayed` (60 s), and `j-parent` waiting for
/// `kid` of queue `kids`. (Not `active`, …: on Redis a job's key would be the state's.)
async fn one_of_each<S: Store>(s: &Sec<S>) {
    s.add_id("j-completed", JobOptions::new()).await;
    s.complete(&id("j-completed"), r#"{"x":1}"#).await;
    s.add_id("j-failed", JobOptions::new()).await;
    s.fail(&id("j-failed"), "boom").await;
    s.add_id("j-active", JobOptions::new()).await;
    assert_eq!(s.take("token").await.id.as_str(), "j-active");
    s.add_id("j-waiting", JobOptions::new()).await;
    s.add_id("j-prioritized", JobOptions::new().priority(3))
        .await;
    s.add_id(
        "j-delayed",
        JobOptions::new().delay(Duration::from_secs(60)),
    )
    .await;
    s.family("j-parent", "kids", &[("kid", JobOptions::new())])
        .await;
}

pub async fn get_state_and_is_job_in_state_name_one_state<S: Store>() {
    let s = Sec::<S>::new().await;
    one_of_each(&s).await;
    for (job, own) in ONE_OF_EACH {
        assert_eq!(s.b.get_state(&id(job)).await.unwrap(), Some(own), "{job}");
        for state in JobState::ALL {
            assert_eq!(
                s.b.is_job_in_state(state, &id(job)).await.unwrap(),
                state == own,
                "{job} in {state:?}"
            );
        }
    }
    assert_eq!(s.b.get_state(&id("nope")).await.unwrap(), None);
    for state in JobState::ALL {
        assert!(!s.b.is_job_in_state(state, &id("nope")).await.unwrap());
    }
    // The child lives in another queue: not this queue's job.
    assert_eq!(s.b.get_state(&id("kid")).await.unwrap(), None);

    // A paused queue's waiting job is still waiting; prioritized ones stay prioritized.
    s.queue.pause().await.unwrap();
    assert_eq!(
        s.b.get_state(&id("j-waiting")).await.unwrap(),
        Some(JobState::Waiting)
    );
    assert!(
        s.b.is_job_in_state(JobState::Waiting, &id("j-waiting"))
            .await
            .unwrap()
    );
    assert!(
        s.b.is_job_in_state(JobState::Prioritized, &id("j-prioritized"))
            .await
            .unwrap()
    );
    assert!(
        !s.b.is_job_in_state(JobState::Waiting, &id("j-prioritized"))
            .await
            .unwrap()
    );
}

pub async fn is_finished_reports_value_reason_pending_and_missing<S: Store>() {
    let s = Sec::<S>::new().await;
    one_of_each(&s).await;
    s.add_id("nothing", JobOptions::new()).await;
    // `waiting` is first in line.
    s.complete(&id("j-waiting"), "null").await;

    assert_eq!(
        s.b.is_finished(&id("j-completed")).await.unwrap(),
        FinishStatus::Completed(Some(r#"{"x":1}"#.to_owned()))
    );
    assert_eq!(
        s.b.is_finished(&id("j-waiting")).await.unwrap(),
        FinishStatus::Completed(Some("null".to_owned()))
    );
    assert_eq!(
        s.b.is_finished(&id("j-failed")).await.unwrap(),
        FinishStatus::Failed(Some("boom".to_owned()))
    );
    for pending in [
        "j-active",
        "nothing",
        "j-prioritized",
        "j-delayed",
        "j-parent",
    ] {
        assert_eq!(
            s.b.is_finished(&id(pending)).await.unwrap(),
            FinishStatus::Pending,
            "{pending}"
        );
    }
    assert_eq!(
        s.b.is_finished(&id("nope")).await.unwrap(),
        FinishStatus::Missing
    );
}

pub async fn is_maxed_follows_the_global_concurrency<S: Store>() {
    let s = Sec::<S>::new().await;
    s.add_id("j1", JobOptions::new()).await;
    s.add_id("j2", JobOptions::new()).await;
    s.take("t").await;
    assert!(!s.b.is_maxed().await.unwrap(), "no global concurrency");
    s.b.set_queue_meta(&[("concurrency", "2".to_owned())])
        .await
        .unwrap();
    assert!(!s.b.is_maxed().await.unwrap());
    s.take("t").await;
    assert!(s.b.is_maxed().await.unwrap());
    s.b.set_queue_meta(&[("concurrency", "3".to_owned())])
        .await
        .unwrap();
    assert!(!s.b.is_maxed().await.unwrap());
}

pub async fn get_job_reads_what_was_added<S: Store>() {
    let s = Sec::<S>::new().await;
    let opts = JobOptions::new()
        .attempts(3)
        .delay(Duration::from_secs(2))
        .priority(4);
    let added = s.add_id("j1", opts).await;
    let job = s.b.get_job(&added).await.unwrap().expect("a job");
    assert_eq!(job.id.as_str(), "j1");
    assert_eq!(job.name, "job");
    assert_eq!(job.data, r#"{"n":"j1"}"#);
    assert_eq!(job.opts.attempts, Some(3));
    assert_eq!(job.priority, 4);
    assert_eq!(job.timestamp, T0);
    assert_eq!(job.delay, Duration::from_secs(2));
    assert_eq!(job.attempts_made, 0);
    assert!(s.b.get_job(&id("404")).await.unwrap().is_none());
}

pub async fn get_deduplication_job_id_names_the_holder<S: Store>() {
    let s = Sec::<S>::new().await;
    let opts = JobOptions::new().deduplication(bullmq_core::options::Deduplication::new("d1"));
    let job = s.add("a", opts).await;
    assert_eq!(
        s.b.get_deduplication_job_id("d1").await.unwrap(),
        Some(job.id)
    );
    assert_eq!(s.b.get_deduplication_job_id("d2").await.unwrap(), None);
}

pub async fn get_job_logs_slices_from_either_end<S: Store>() {
    let s = Sec::<S>::new().await;
    let j = s.add_id("j", JobOptions::new()).await;
    for i in 0..5 {
        s.b.add_log(&j, &format!("l{i}"), None).await.unwrap();
    }
    let logs = |v: &[&str]| JobLogs {
        logs: v.iter().map(|s| (*s).to_owned()).collect(),
        count: 5,
    };
    let read = |r: Range| s.b.get_job_logs(&j, r);
    assert_eq!(
        read(range(0, -1, true)).await.unwrap(),
        logs(&["l0", "l1", "l2", "l3", "l4"])
    );
    assert_eq!(
        read(range(0, -1, false)).await.unwrap(),
        logs(&["l4", "l3", "l2", "l1", "l0"])
    );
    assert_eq!(
        read(Range::ALL).await.unwrap(),
        read(range(0, -1, false)).await.unwrap()
    );
    assert_eq!(read(range(1, 2, true)).await.unwrap(), logs(&["l1", "l2"]));
    assert_eq!(read(range(0, 1, false)).await.unwrap(), logs(&["l4", "l3"]));
    assert_eq!(
        read(range(-2, -1, true)).await.unwrap(),
        logs(&["l3", "l4"])
    );
    assert_eq!(read(range(-9, 0, true)).await.unwrap(), logs(&["l0"]));
    assert_eq!(read(range(3, 99, true)).await.unwrap(), logs(&["l3", "l4"]));
    // Empty slices still report the count.
    assert_eq!(read(range(3, 1, true)).await.unwrap(), logs(&[]));
    assert_eq!(read(range(7, 9, false)).await.unwrap(), logs(&[]));
    assert_eq!(
        s.b.get_job_logs(&id("nope"), Range::ALL).await.unwrap(),
        JobLogs::default()
    );
}

pub async fn counts_per_type_and_per_priority<S: Store>() {
    let s = Sec::<S>::new().await;
    one_of_each(&s).await;
    s.add_id("waiting2", JobOptions::new()).await;
    s.add_id("later", JobOptions::new().delay(Duration::from_secs(3600)))
        .await;
    s.add_id("p1", JobOptions::new().priority(1)).await;

    let types = [
        t(JobState::Active),
        t(JobState::Completed),
        t(JobState::Failed),
        t(JobState::Delayed),
        t(JobState::Waiting),
        JobType::Wait,
        t(JobState::Prioritized),
        t(JobState::WaitingChildren),
        JobType::Repeat,
    ];
    assert_eq!(
        s.b.get_counts(&types, None).await.unwrap(),
        [1, 1, 1, 2, 2, 2, 2, 1, 0]
    );
    assert_eq!(s.b.get_counts(&[], None).await.unwrap(), Vec::<u64>::new());
    // Only delayed jobs due before the cut-off; the other counts are unchanged.
    let cutoff = T0 + 600_000;
    assert_eq!(
        s.b.get_counts(&[t(JobState::Waiting), t(JobState::Delayed)], Some(cutoff))
            .await
            .unwrap(),
        [2, 1]
    );
    assert_eq!(
        s.b.get_counts(&[t(JobState::Delayed)], Some(T0 + 60_000))
            .await
            .unwrap(),
        [0]
    );
    assert_eq!(
        s.b.get_counts(&[t(JobState::Delayed)], Some(T0 + 60_001))
            .await
            .unwrap(),
        [1]
    );
    assert_eq!(
        s.b.get_counts(&[t(JobState::Active)], Some(0))
            .await
            .unwrap(),
        [1]
    );

    assert_eq!(
        s.b.get_counts_per_priority(&[0, 1, 3, 7]).await.unwrap(),
        [2, 1, 1, 0]
    );
}

pub async fn get_ranges_orders_pages_and_drops_repeats<S: Store>() {
    let s = Sec::<S>::new().await;
    for job in ["w1", "w2", "w3", "w4"] {
        s.add_id(job, JobOptions::new()).await;
    }
    s.add_id("p1", JobOptions::new().priority(2)).await;
    s.add_id("p2", JobOptions::new().priority(1)).await;
    s.add_id("p3", JobOptions::new().priority(1)).await;
    s.add_id("d1", JobOptions::new().delay(Duration::from_secs(20)))
        .await;
    s.add_id("d2", JobOptions::new().delay(Duration::from_secs(10)))
        .await;
    let b = &s.b;
    let get = |types: &'static [JobType], r| async move { b.get_ranges(types, r).await.unwrap() };

    // Lists: newest first, oldest first when asked so; pages count from that end.
    const WAITING: &[JobType] = &[JobType::State(JobState::Waiting)];
    assert_eq!(
        ids(&get(WAITING, Range::ALL).await),
        ["w4", "w3", "w2", "w1"]
    );
    assert_eq!(
        ids(&get(WAITING, range(0, -1, true)).await),
        ["w1", "w2", "w3", "w4"]
    );
    assert_eq!(ids(&get(WAITING, range(1, 2, false)).await), ["w3", "w2"]);
    assert_eq!(ids(&get(WAITING, range(0, 1, true)).await), ["w1", "w2"]);
    assert_eq!(ids(&get(WAITING, range(1, 2, true)).await), ["w2", "w3"]);
    assert!(get(WAITING, range(3, 1, false)).await.is_empty());
    assert!(get(WAITING, range(10, 20, false)).await.is_empty());

    // Sorted states: by priority, then arrival; by due time.
    const PRIORITIZED: &[JobType] = &[JobType::State(JobState::Prioritized)];
    assert_eq!(
        ids(&get(PRIORITIZED, range(0, -1, true)).await),
        ["p2", "p3", "p1"]
    );
    const DELAYED: &[JobType] = &[JobType::State(JobState::Delayed)];
    assert_eq!(ids(&get(DELAYED, range(0, 0, true)).await), ["d2"]);
    assert_eq!(ids(&get(DELAYED, Range::ALL).await), ["d1", "d2"]);

    // Several types, in the order asked, an id met twice kept where first met.
    const MIXED: &[JobType] = &[
        JobType::State(JobState::Delayed),
        JobType::Wait,
        JobType::State(JobState::Waiting),
        JobType::Repeat,
    ];
    assert_eq!(
        ids(&get(MIXED, range(0, -1, true)).await),
        ["d2", "d1", "w1", "w2", "w3", "w4"]
    );

    // Active and finished jobs.
    s.complete(&id("w1"), "1").await;
    assert_eq!(s.take("t").await.id.as_str(), "w2");
    const ACTIVE: &[JobType] = &[JobType::State(JobState::Active)];
    assert_eq!(ids(&get(ACTIVE, Range::ALL).await), ["w2"]);
    const FINISHED: &[JobType] = &[
        JobType::State(JobState::Completed),
        JobType::State(JobState::Waiting),
    ];
    assert_eq!(ids(&get(FINISHED, range(0, 0, true)).await), ["w1", "w3"]);
}

/// Parent `p` with children in queue `kids`: `c1` completed (`{"v":1}`), `c2` failed and
/// ignored (`nope`), `c3` failed (`bad`, failing its parent), `c4` and `c5` pending. The
/// children's queue.
async fn dependents<S: Store>(s: &Sec<S>) -> Queue<S::B> {
    let kids = s.sibling("kids").await;
    s.family(
        "p",
        "kids",
        &[
            ("c1", JobOptions::new()),
            ("c2", JobOptions::new().ignore_dependency_on_failure(true)),
            ("c3", JobOptions::new().fail_parent_on_failure(true)),
            ("c4", JobOptions::new()),
            ("c5", JobOptions::new()),
        ],
    )
    .await;
    complete_on(kids.backend(), &id("c1"), r#"{"v":1}"#).await;
    fail_on(kids.backend(), &id("c2"), "nope").await;
    fail_on(kids.backend(), &id("c3"), "bad").await;
    kids
}

pub async fn dependency_counts_lists_and_values<S: Store>() {
    let s = Sec::<S>::new().await;
    let kids = dependents(&s).await;
    let key = |c: &str| kids.backend().to_key(c);
    let p = id("p");
    assert_eq!(
        s.b.get_dependency_counts(&p, &DEPENDENCY_KINDS)
            .await
            .unwrap(),
        [1, 1, 2, 1]
    );
    assert_eq!(
        s.b.get_dependency_counts(&id("nope"), &DEPENDENCY_KINDS)
            .await
            .unwrap(),
        [0, 0, 0, 0]
    );

    let mut all =
        s.b.get_dependencies(&p, &DependenciesQuery::default())
            .await
            .unwrap();
    if let Some((unprocessed, _)) = all.unprocessed.as_mut() {
        unprocessed.sort();
    }
    assert_eq!(
        all.processed,
        Some((vec![(key("c1"), r#"{"v":1}"#.to_owned())], 0))
    );
    assert_eq!(all.unprocessed, Some((vec![key("c4"), key("c5")], 0)));
    assert_eq!(all.ignored, Some((vec![(key("c2"), "nope".to_owned())], 0)));
    assert_eq!(all.failed, Some((vec![key("c3")], 0)));

    assert_eq!(
        s.b.get_processed_children_values(&p).await.unwrap(),
        [(key("c1"), r#"{"v":1}"#.to_owned())]
    );
    assert_eq!(
        s.b.get_ignored_children_failures(&p).await.unwrap(),
        [(key("c2"), "nope".to_owned())]
    );
    assert!(
        s.b.get_processed_children_values(&id("nope"))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.b.get_ignored_children_failures(&id("nope"))
            .await
            .unwrap()
            .is_empty()
    );

    // One page per list asked for; a page of nothing is done.
    let page = |kind, cursor, count| DependenciesQuery {
        lists: vec![(kind, cursor, count)],
    };
    let one =
        s.b.get_dependencies(&p, &page(DependencyKind::Ignored, 0, 5))
            .await
            .unwrap();
    assert_eq!(one.ignored, Some((vec![(key("c2"), "nope".to_owned())], 0)));
    assert!(one.processed.is_none() && one.unprocessed.is_none() && one.failed.is_none());
    let nothing =
        s.b.get_dependencies(&p, &page(DependencyKind::Failed, 0, 0))
            .await
            .unwrap();
    assert_eq!(nothing.failed, Some((Vec::new(), 0)));
}

pub async fn paginate_pages_processed_and_unprocessed_children<S: Store>() {
    let s = Sec::<S>::new().await;
    let kids = s.sibling("kids").await;
    let children: Vec<(&str, JobOptions)> = ["a", "b", "c", "d", "e"]
        .into_iter()
        .map(|c| (c, JobOptions::new()))
        .collect();
    s.family("p", "kids", &children).await;
    complete_on(kids.backend(), &id("a"), r#""A""#).await;
    complete_on(kids.backend(), &id("b"), r#"{"b":2}"#).await;
    let key = |c: &str| kids.backend().to_key(c);
    let p = id("p");

    let page =
        s.b.paginate(&p, DependencyKind::Unprocessed, 0, u64::MAX, false)
            .await
            .unwrap();
    assert_eq!((page.cursor, page.total), (0, 3));
    let mut items = page.items.clone();
    items.sort();
    assert_eq!(
        items,
        [(key("c"), None), (key("d"), None), (key("e"), None)]
    );
    assert!(page.jobs.is_empty(), "jobs only when asked");

    let page =
        s.b.paginate(&p, DependencyKind::Unprocessed, 0, u64::MAX, true)
            .await
            .unwrap();
    let mut jobs: Vec<(String, String)> = page
        .jobs
        .iter()
        .map(|j| (j.id.to_string(), j.data.clone()))
        .collect();
    jobs.sort();
    assert_eq!(
        jobs,
        [
            ("c".to_owned(), r#"{"n":"c"}"#.to_owned()),
            ("d".to_owned(), r#"{"n":"d"}"#.to_owned()),
            ("e".to_owned(), r#"{"n":"e"}"#.to_owned()),
        ]
    );

    let page =
        s.b.paginate(&p, DependencyKind::Processed, 0, 5, true)
            .await
            .unwrap();
    assert_eq!(page.total, 2);
    assert_eq!(
        page.items,
        [
            (key("a"), Some(r#""A""#.to_owned())),
            (key("b"), Some(r#"{"b":2}"#.to_owned()))
        ]
    );
    let jobs: Vec<&str> = page.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(jobs, ["a", "b"]);
    assert_eq!(page.jobs[0].return_value.as_deref(), Some(r#""A""#));
    // Both ends count: one item.
    let page =
        s.b.paginate(&p, DependencyKind::Processed, 1, 1, false)
            .await
            .unwrap();
    assert_eq!(page.items, [(key("b"), Some(r#"{"b":2}"#.to_owned()))]);

    let none =
        s.b.paginate(&id("none"), DependencyKind::Unprocessed, 0, u64::MAX, true)
            .await
            .unwrap();
    assert_eq!((none.total, none.items.len()), (0, 0));

    // Upstream pages the failed children on neither store (ignored ones only on Redis).
    let refused = s.b.paginate(&p, DependencyKind::Failed, 0, 10, true).await;
    assert!(
        matches!(refused, Err(Error::Unsupported { .. })),
        "{refused:?}"
    );
}

/// The age `now` gives a job that became ready at `since` (Unix ms).
fn age(now: u64, since: u64) -> Option<Duration> {
    Some(Duration::from_millis(now - since))
}

pub async fn scaling_signals_count_the_backlog_and_age_its_oldest_job<S: Store>() {
    let s = Sec::<S>::new().await;
    // Nothing at all: no age, every count 0.
    let empty = s.queue.scaling_signals().await.unwrap();
    assert_eq!(
        (
            empty.backlog,
            empty.active,
            empty.oldest_waiting_age,
            empty.paused
        ),
        (0, 0, None, false)
    );

    // At T0: one job taken, one delayed job due at T0 + 2 s, one due in an hour.
    s.add_id("a", JobOptions::new()).await;
    assert_eq!(s.take("t").await.id.as_str(), "a");
    s.add_id("d-due", JobOptions::new().delay(Duration::from_secs(2)))
        .await;
    s.add_id(
        "d-later",
        JobOptions::new().delay(Duration::from_secs(3600)),
    )
    .await;
    // At T0 + 5 s: two waiting and two prioritized jobs.
    s.clock.set(T0 + 5_000);
    for job in ["w1", "w2"] {
        s.add_id(job, JobOptions::new()).await;
    }
    s.add_id("p1", JobOptions::new().priority(2)).await;
    s.add_id("p2", JobOptions::new().priority(1)).await;
    let now = T0 + 9_000;
    s.clock.set(now);

    let signals = s.queue.scaling_signals().await.unwrap();
    let counts = s
        .queue
        .get_job_counts(&[
            t(JobState::Waiting),
            t(JobState::Prioritized),
            t(JobState::Active),
            t(JobState::Delayed),
        ])
        .await
        .unwrap();
    let count = |state| counts.iter().find(|(t, _)| *t == state).unwrap().1;
    assert_eq!(signals.waiting, count(t(JobState::Waiting)));
    assert_eq!(signals.prioritized, count(t(JobState::Prioritized)));
    assert_eq!(signals.active, count(t(JobState::Active)));
    assert_eq!(
        count(t(JobState::Delayed)),
        2,
        "both delayed jobs are still delayed"
    );
    let due = s.queue.get_delayed_count(Some(now + 1)).await.unwrap();
    assert_eq!(signals.delayed_due, due);
    assert_eq!(
        (
            signals.waiting,
            signals.prioritized,
            signals.delayed_due,
            signals.active
        ),
        (2, 2, 1, 1)
    );
    assert_eq!(signals.backlog, 5);
    assert!(!signals.paused);
    // The due delayed job has waited longest: since its due time, not its timestamp.
    let d_due = s.job(&id("d-due")).await;
    let due_at = d_due.timestamp + u64::try_from(d_due.delay.as_millis()).unwrap();
    assert_eq!(due_at, T0 + 2_000);
    assert_eq!(signals.oldest_waiting_age, age(now, due_at));

    // Without it, the oldest waiting job by its timestamp.
    s.b.remove(&id("d-due"), false).await.unwrap();
    let signals = s.queue.scaling_signals().await.unwrap();
    let w1 = s.job(&id("w1")).await;
    assert_eq!(w1.timestamp, T0 + 5_000);
    assert_eq!(
        (signals.delayed_due, signals.backlog),
        (0, 4),
        "{signals:?}"
    );
    assert_eq!(signals.oldest_waiting_age, age(now, w1.timestamp));

    // Only prioritized jobs left ready: the oldest of them.
    for job in ["w1", "w2"] {
        s.b.remove(&id(job), false).await.unwrap();
    }
    s.clock.set(now + 1_000);
    let signals = s.queue.scaling_signals().await.unwrap();
    let p1 = s.job(&id("p1")).await;
    assert_eq!((signals.waiting, signals.prioritized), (0, 2));
    assert_eq!(signals.oldest_waiting_age, age(now + 1_000, p1.timestamp));

    // Paused: reported, and the waiting jobs still counted (on both stores).
    s.add_id("w3", JobOptions::new()).await;
    s.queue.pause().await.unwrap();
    let signals = s.queue.scaling_signals().await.unwrap();
    assert!(signals.paused);
    assert_eq!((signals.waiting, signals.backlog), (1, 3));

    // The JSON an autoscaler reads, field by field, and no other field.
    let report = s.queue.scaling_report().await.unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let fields = json.as_object().unwrap();
    let mut names: Vec<&str> = fields.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "active",
            "backlog",
            "delayed_due",
            "oldest_waiting_age_seconds",
            "paused",
            "prioritized",
            "queue",
            "waiting"
        ]
    );
    assert_eq!(json["queue"], "q");
    assert_eq!(json["backlog"], 3);
    assert_eq!(json["waiting"], 1);
    assert_eq!(json["prioritized"], 2);
    assert_eq!(json["delayed_due"], 0);
    assert_eq!(json["active"], 1);
    let age_seconds = (now + 1_000 - p1.timestamp) as f64 / 1000.0;
    assert_eq!(json["oldest_waiting_age_seconds"], age_seconds);
    assert_eq!(json["paused"], true);

    // Resumed and emptied: the age is gone, and the JSON reads 0.
    s.queue.resume().await.unwrap();
    for job in ["w3", "p1", "p2"] {
        s.b.remove(&id(job), false).await.unwrap();
    }
    let report = s.queue.scaling_report().await.unwrap();
    assert_eq!((report.backlog, report.paused), (0, false));
    assert_eq!(report.oldest_waiting_age_seconds, 0.0);
    assert_eq!(
        s.queue.scaling_signals().await.unwrap().oldest_waiting_age,
        None
    );
}

/// A child another runtime wrote oddly (its `opts` not an object, written with raw commands)
/// does not fail the listing of its parent's children: its item stays, the others' jobs are
/// read, and it is named with the field at fault, as `get_jobs_checked` names such jobs.
pub async fn a_child_that_cannot_be_read_is_reported_beside_the_others<S: Store>() {
    let s = Sec::<S>::new().await;
    let kids = s.sibling("kids").await;
    let children: Vec<(&str, JobOptions)> = ["a", "b", "c"]
        .into_iter()
        .map(|c| (c, JobOptions::new()))
        .collect();
    s.family("p", "kids", &children).await;
    complete_on(kids.backend(), &id("a"), r#""A""#).await;
    s.store.spoil_opts(kids.name(), &id("a")).await;
    s.store.spoil_opts(kids.name(), &id("c")).await;
    let p = id("p");
    for (kind, good, bad) in [
        (DependencyKind::Unprocessed, vec!["b"], vec!["c"]),
        (DependencyKind::Processed, vec![], vec!["a"]),
    ] {
        for page in [
            s.b.paginate(&p, kind, 0, u64::MAX, true).await.unwrap(),
            s.queue.get_dependencies(&p, kind, 0, None).await.unwrap(),
        ] {
            let read: Vec<&str> = page.jobs.iter().map(|j| j.id.as_str()).collect();
            assert_eq!(read, good, "{kind:?}");
            let named: Vec<&str> = page.undecodable.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(named, bad, "{kind:?}");
            for (id, reason) in &page.undecodable {
                assert_eq!(
                    (reason.field, reason.job_id.as_str()),
                    ("opts", id.as_str())
                );
            }
            assert_eq!(page.items.len(), good.len() + bad.len(), "{kind:?}");
        }
    }
    // The child itself still reads as undecodable, not as missing.
    let err = kids.get_job(&id("c")).await.unwrap_err();
    assert!(matches!(err, Error::JobDecode(_)), "{err}");
}
