//! `AddJobs`: one job, many, and jobs of another queue.

use bullmq_core::backend::{AddJobs, Lifecycle, NewJob, ParentKeyOpts, Queries};
use bullmq_core::options::ParentOptions;
use bullmq_core::{Error, Job, JobOptions, JobState, QueueName, ScriptErrorCode};

use super::{Sec, T0, id};
use crate::store::Store;

fn job(name: &str, data: &str, opts: JobOptions) -> Job {
    Job::new(name, data.to_owned(), opts, T0)
}

pub async fn a_duplicate_id_answers_the_existing_job<S: Store>() {
    let s = Sec::<S>::new().await;
    let add_dup = |name, data| {
        let b = &s.b;
        async move {
            let dup = job(name, data, JobOptions::new().job_id("dup"));
            b.add_job(&dup, &ParentKeyOpts::default()).await.unwrap()
        }
    };
    let first = add_dup("a", r#"{"v":1}"#).await;
    assert_eq!(first.as_str(), "dup");
    let again = add_dup("b", r#"{"v":2}"#).await;
    assert_eq!(again, first);
    let stored = s.job(&first).await;
    assert_eq!(
        (stored.name.as_str(), stored.data.as_str()),
        ("a", r#"{"v":1}"#)
    );
    assert_eq!(
        s.b.get_counts(&[JobState::Waiting.into()], None)
            .await
            .unwrap(),
        [1]
    );

    // Generated ids count up. (From what: Redis counts custom ids too, PostgreSQL does not.)
    let auto = job("c", "{}", JobOptions::new());
    let none = ParentKeyOpts::default();
    let first = number(&s.b.add_job(&auto, &none).await.unwrap());
    assert_eq!(number(&s.b.add_job(&auto, &none).await.unwrap()), first + 1);
}

pub async fn add_jobs_answers_ids_in_input_order<S: Store>() {
    let s = Sec::<S>::new().await;
    let batch: Vec<NewJob> = [
        ("a", JobOptions::new()),
        ("b", JobOptions::new().job_id("custom")),
        ("c", JobOptions::new().priority(2)),
    ]
    .into_iter()
    .map(|(name, opts)| NewJob {
        job: job(name, "{}", opts),
        parent: ParentKeyOpts::default(),
    })
    .collect();
    let ids = s.b.add_jobs(&batch).await.unwrap();
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[1].as_str(), "custom");
    for (i, name) in ids.iter().zip(["a", "b", "c"]) {
        assert_eq!(s.job(i).await.name, name);
    }
    assert_eq!(s.state(&ids[2]).await, Some(JobState::Prioritized));
}

pub async fn add_jobs_reports_each_job_when_one_is_refused<S: Store>() {
    let s = Sec::<S>::new().await;
    let orphan = {
        // A parent that does not exist: the store refuses this job alone.
        let opts = JobOptions::new().parent(ParentOptions::new("gone", s.b.qualified_name()));
        let job = job("orphan", "{}", opts);
        let parent = ParentKeyOpts::of(&job);
        NewJob { job, parent }
    };
    let plain = |name: &str| NewJob {
        job: job(name, "{}", JobOptions::new().job_id(name)),
        parent: ParentKeyOpts::default(),
    };
    let batch = [plain("a"), orphan, plain("c")];
    let Err(Error::Bulk(failed)) = s.b.add_jobs(&batch).await else {
        panic!("the orphan is refused")
    };
    let added: Vec<(usize, &str)> = failed
        .added
        .iter()
        .map(|a| (a.index, a.id.as_str()))
        .collect();
    assert_eq!(added, [(0, "a"), (2, "c")]);
    assert_eq!(failed.refused.len(), 1);
    assert_eq!(failed.refused[0].index, Some(1));
    assert!(
        matches!(&failed.refused[0].error, Error::Script(e) if e.code == ScriptErrorCode::ParentNotFound),
        "{failed}"
    );
    assert!(failed.unknown.is_none());
    assert_eq!(failed.to_retry(), [1]);
    assert_eq!(
        s.b.get_counts(&[JobState::Waiting.into()], None)
            .await
            .unwrap(),
        [2]
    );
}

pub async fn a_backend_for_another_queue_adds_there<S: Store>() {
    let s = Sec::<S>::new().await;
    let other = s.b.for_queue(&QueueName::new("other").unwrap(), None);
    let added = other
        .add_job(
            &job("x", "{}", JobOptions::new().job_id("there")),
            &ParentKeyOpts::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        other.get_state(&added).await.unwrap(),
        Some(JobState::Waiting)
    );
    assert_eq!(s.state(&id("there")).await, None, "not this queue's job");
    // Its own count of generated ids, whatever this queue adds meanwhile.
    let auto = job("y", "{}", JobOptions::new());
    let none = ParentKeyOpts::default();
    let first = number(&other.add_job(&auto, &none).await.unwrap());
    s.b.add_job(&auto, &none).await.unwrap();
    s.b.add_job(&auto, &none).await.unwrap();
    assert_eq!(
        number(&other.add_job(&auto, &none).await.unwrap()),
        first + 1
    );
}

/// A generated id as its number.
fn number(id: &bullmq_core::JobId) -> u64 {
    id.as_str().parse().expect("a generated id is a number")
}
