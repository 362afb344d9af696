//! `Locks`: renewing the locks a worker holds.

use std::time::Duration;

use bullmq_core::backend::{Locks, Transitions};
use bullmq_core::options::KeepJobs;
use bullmq_core::{JobOptions, JobState, ScriptErrorCode};

use super::{Sec, complete_args, id, script, token};
use crate::store::Store;

const LONGER: Duration = Duration::from_secs(120);

pub async fn extend_lock_renews_only_the_holders_lock<S: Store>() {
    let s = Sec::<S>::new().await;
    let added = s.add("a", JobOptions::new()).await;
    s.take("tok").await;

    assert!(s.extends(&added.id, "tok", LONGER).await);
    assert!(!s.extends(&added.id, "thief", LONGER).await);
    assert!(!s.extends(&id("nope"), "tok", LONGER).await);
    // The thief's attempt left the holder's lock alone.
    assert!(s.extends(&added.id, "tok", LONGER).await);
    assert_eq!(s.state(&added.id).await, Some(JobState::Active));
}

pub async fn extend_locks_answers_the_lost_ones<S: Store>() {
    let s = Sec::<S>::new().await;
    let held = s.add("held", JobOptions::new()).await;
    let stolen = s.add("stolen", JobOptions::new()).await;
    s.take("tok").await;
    let other = s.take("other-worker").await;
    assert_eq!(other.id, stolen.id);

    let lost =
        s.b.extend_locks(
            &[
                (held.id.clone(), token("tok")),
                (stolen.id.clone(), token("tok")),
                (id("nope"), token("tok")),
            ],
            LONGER,
        )
        .await
        .unwrap();
    assert_eq!(lost, vec![stolen.id.clone(), id("nope")]);
    assert!(s.b.extend_locks(&[], LONGER).await.unwrap().is_empty());
    // Another worker's lock is left alone: it still finishes its job, the loser cannot.
    let err = script(
        s.b.move_to_completed(&other, &complete_args("tok", "1", KeepJobs::KeepAll, false))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, ScriptErrorCode::LockMismatch);
    assert_eq!(err.state.as_deref(), Some("active"));
    s.b.move_to_completed(
        &other,
        &complete_args("other-worker", "1", KeepJobs::KeepAll, false),
    )
    .await
    .unwrap();
    assert_eq!(s.state(&stolen.id).await, Some(JobState::Completed));
}
