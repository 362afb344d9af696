//! `JobOptions::or`: a queue's default job options under a job's own, field by field.

use std::time::Duration;

use bullmq_core::JobOptions;
use bullmq_core::options::{Backoff, KeepJobs};
use serde_json::json;

#[test]
fn a_jobs_own_options_win_field_by_field() {
    let mut defaults = JobOptions::new()
        .attempts(5)
        .backoff(Backoff::fixed(Duration::from_secs(1)))
        .remove_on_complete(KeepJobs::RemoveAll);
    defaults.extra.insert("custom".into(), json!("default"));
    defaults.extra.insert("other".into(), json!(1));

    let mut own = JobOptions::new()
        .attempts(2)
        .delay(Duration::from_millis(10));
    own.extra.insert("custom".into(), json!("own"));

    let merged = own.or(&defaults);
    assert_eq!(merged.attempts, Some(2));
    assert_eq!(merged.delay, Some(Duration::from_millis(10)));
    assert_eq!(merged.backoff, Some(Backoff::fixed(Duration::from_secs(1))));
    assert_eq!(merged.remove_on_complete, Some(KeepJobs::RemoveAll));
    assert_eq!(merged.extra["custom"], json!("own"));
    assert_eq!(merged.extra["other"], json!(1));
}

#[test]
fn no_defaults_change_nothing() {
    let own = JobOptions::new().priority(3).lifo(false);
    assert_eq!(own.clone().or(&JobOptions::new()), own);
}
