//! Every action, on both stores: each runs, answers a 303 back to a page, and changes the
//! queue.

use axum::http::StatusCode;
use bullmq::job::{JobState, JobType};

use crate::both_stores;
use crate::support::{Answer, Fixture, Session, Store, get};

async fn count(fx: &Fixture, state: JobState) -> u64 {
    fx.queue
        .get_job_count_by_types(&[JobType::State(state)])
        .await
        .unwrap()
}

/// The page of the bulk run `started` redirected to, once the run has finished.
async fn finished_run(app: &axum::Router, s: &Session, started: &Answer) -> String {
    let run = started.redirected();
    assert!(run.contains("/bulk/runs/"), "{run}");
    bullmq_test_support::eventually(
        "the bulk run to finish",
        std::time::Duration::from_secs(60),
        || async move { s.get(app, run).await.ok().contains("Finished: ") },
    )
    .await;
    s.get(app, run).await.ok().to_owned()
}

async fn job_actions_retry_promote_and_remove(store: Store) {
    let fx = Fixture::new(store).await;
    let (app, s) = fx.browse("?state=failed").await;
    let retried = s.job_action(&app, &fx, &fx.failed, "retry").await;
    let back = retried.redirected();
    assert!(back.starts_with(&fx.path("/jobs/")), "{back}");
    assert_eq!(fx.state(&fx.failed).await, Some(JobState::Waiting));
    // A waiting job cannot be retried: a 400 naming the field.
    let again = s.job_action(&app, &fx, &fx.failed, "retry").await;
    assert_eq!(again.status, StatusCode::BAD_REQUEST, "{}", again.body);
    s.job_action(&app, &fx, &fx.delayed, "promote")
        .await
        .redirected();
    assert_eq!(fx.state(&fx.delayed).await, Some(JobState::Waiting));
    let removed = s.job_action(&app, &fx, &fx.completed, "remove").await;
    // The page it leads to answers.
    get(&app, removed.redirected()).await.ok();
    assert!(!fx.exists(&fx.completed).await);
}
both_stores!(job_actions_retry_promote_and_remove);

async fn a_corrupt_job_can_be_removed(store: Store) {
    let fx = Fixture::new(store).await;
    let corrupt = fx.corrupt_job().await;
    let app = fx.app();
    let s = Session::open(&app, &fx.path("?state=waiting")).await;
    s.job_action(&app, &fx, &corrupt, "remove")
        .await
        .redirected();
    assert!(
        !get(&app, &fx.path("?state=waiting"))
            .await
            .ok()
            .contains("cannot be decoded")
    );
}
both_stores!(a_corrupt_job_can_be_removed);

async fn add_pause_resume_drain_and_clean(store: Store) {
    let fx = Fixture::new(store).await;
    let (app, s) = fx.browse("").await;
    let before = count(&fx, JobState::Waiting).await;
    let added = s
        .post(
            &app,
            &fx.path("/add"),
            &[("name", "from-web"), ("data", "{\"a\":1}")],
        )
        .await;
    added.redirected();
    assert_eq!(count(&fx, JobState::Waiting).await, before + 1);
    let bad = s
        .post(&app, &fx.path("/add"), &[("name", "x"), ("data", "{nope")])
        .await;
    bad.refused(StatusCode::BAD_REQUEST, "`data`");
    assert!(bad.body.contains("JSON"), "{}", bad.body);
    let unnamed = s.post(&app, &fx.path("/add"), &[("name", " ")]).await;
    unnamed.refused(StatusCode::BAD_REQUEST, "`name`");

    s.post(&app, &fx.path("/pause"), &[]).await.redirected();
    assert!(fx.queue.is_paused().await.unwrap());
    assert!(get(&app, &fx.path("")).await.ok().contains("paused"));
    s.post(&app, &fx.path("/resume"), &[]).await.redirected();
    assert!(!fx.queue.is_paused().await.unwrap());

    let cleaned = s
        .post(
            &app,
            &fx.path("/clean"),
            &[("state", "completed"), ("grace", "0"), ("limit", "0")],
        )
        .await;
    let back = cleaned.redirected();
    assert!(back.contains("cleaned%202%20completed"), "{back}");
    assert_eq!(count(&fx, JobState::Completed).await, 0);
    let drained = s.post(&app, &fx.path("/drain"), &[("delayed", "1")]).await;
    drained.redirected();
    assert_eq!(count(&fx, JobState::Waiting).await, 0);
    assert_eq!(count(&fx, JobState::Delayed).await, 0);
}
both_stores!(add_pause_resume_drain_and_clean);

async fn obliterate_needs_the_queue_name_typed(store: Store) {
    let fx = Fixture::new(store).await;
    let (app, s) = fx.browse("").await;
    let wrong = s
        .post(&app, &fx.path("/obliterate"), &[("confirm", "not-it")])
        .await;
    wrong.refused(StatusCode::BAD_REQUEST, "`confirm`");
    assert!(fx.exists(&fx.waiting).await);
    let done = s
        .post(&app, &fx.path("/obliterate"), &[("confirm", &fx.name)])
        .await;
    assert_eq!(done.redirected(), "/admin");
    assert!(!fx.exists(&fx.waiting).await);
    let names: Vec<String> = fx
        .queue
        .backend()
        .queue_names()
        .await
        .unwrap()
        .into_iter()
        .map(|q| q.as_str().to_owned())
        .collect();
    assert!(!names.contains(&fx.name), "{names:?}");
}
both_stores!(obliterate_needs_the_queue_name_typed);

async fn bulk_retry_and_remove_every_job_of_a_state(store: Store) {
    let fx = Fixture::new(store).await;
    let (app, s) = fx.browse("/bulk?state=failed&action=retry").await;
    let waiting = count(&fx, JobState::Waiting).await;
    let retried = s
        .post(
            &app,
            &fx.path("/bulk"),
            &[("state", "failed"), ("action", "retry")],
        )
        .await;
    let page = finished_run(&app, &s, &retried).await;
    assert!(page.contains("1</span> of 1 job(s) retried"), "{page}");
    assert_eq!(count(&fx, JobState::Failed).await, 0);
    assert_eq!(count(&fx, JobState::Waiting).await, waiting + 1);
    let removed = s
        .post(
            &app,
            &fx.path("/bulk"),
            &[("state", "completed"), ("action", "remove")],
        )
        .await;
    let page = finished_run(&app, &s, &removed).await;
    assert!(page.contains("2</span> of 2 job(s) removed"), "{page}");
    assert_eq!(count(&fx, JobState::Completed).await, 0);
    let refused = s
        .post(
            &app,
            &fx.path("/bulk"),
            &[("state", "active"), ("action", "remove")],
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
}
both_stores!(bulk_retry_and_remove_every_job_of_a_state);

async fn bulk_retry_on_a_search_shows_its_count_then_its_progress(store: Store) {
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let waiting = count(&fx, JobState::Waiting).await;
    // The completed jobs' data hold 1 and 3; only the one with 3 matches.
    let confirm = Session::open(&app, &fx.path("/bulk?state=completed&action=retry&q=3")).await;
    let page = confirm
        .get(&app, &fx.path("/bulk?state=completed&action=retry&q=3"))
        .await;
    assert!(
        page.ok().contains("data-bulk-count>1<") && page.body.contains("name=\"q\" value=\"3\""),
        "{}",
        page.body
    );
    let started = confirm
        .post(
            &app,
            &fx.path("/bulk"),
            &[("state", "completed"), ("action", "retry"), ("q", "3")],
        )
        .await;
    let page = finished_run(&app, &confirm, &started).await;
    assert!(page.contains("1</span> of 1 job(s) retried"), "{page}");
    assert_eq!(count(&fx, JobState::Completed).await, 1);
    assert_eq!(count(&fx, JobState::Waiting).await, waiting + 1);
    assert_eq!(fx.state(&fx.big).await, Some(JobState::Waiting));
    let unknown = confirm.get(&app, &fx.path("/bulk/runs/999999")).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
}
both_stores!(bulk_retry_on_a_search_shows_its_count_then_its_progress);

async fn a_jobs_data_is_updated_from_its_page(store: Store) {
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let page = fx.path(&format!("/jobs/{}", fx.waiting.as_str()));
    let s = Session::open(&app, &page).await;
    let shown = s.get(&app, &page).await;
    assert!(
        shown.ok().contains("Edit the data") && shown.body.contains("/update\""),
        "{}",
        shown.body
    );
    let update = format!("{page}/update");
    let updated = s
        .post(&app, &update, &[("data", "{\"find\":\"you\",\"n\":2}")])
        .await;
    let back = updated.redirected();
    assert!(back.contains("done=updated"), "{back}");
    let job = fx.queue.get_job(&fx.waiting).await.unwrap().unwrap();
    let data: serde_json::Value = serde_json::from_str(&job.data).unwrap();
    assert_eq!(data, serde_json::json!({"find": "you", "n": 2}));
    let bad = s.post(&app, &update, &[("data", "{nope")]).await;
    bad.refused(StatusCode::BAD_REQUEST, "`data`");
    let gone = s
        .post(
            &app,
            &fx.path("/jobs/no-such-job/update"),
            &[("data", "{}")],
        )
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{}", gone.body);
    let job = fx.queue.get_job(&fx.waiting).await.unwrap().unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&job.data).unwrap(),
        data,
        "a refused update leaves the data as it was"
    );
}
both_stores!(a_jobs_data_is_updated_from_its_page);

async fn selected_jobs_are_retried_promoted_and_removed(store: Store) {
    let fx = Fixture::new(store).await;
    let (app, s) = fx.browse("?state=completed").await;
    let list = s.get(&app, &fx.path("?state=completed")).await;
    assert!(
        list.ok().contains("form=\"selected\"")
            && list
                .body
                .contains(&format!("value=\"{}\"", fx.completed.as_str())),
        "{}",
        list.body
    );
    let selected = fx.path("/selected");
    let retried = s
        .post(
            &app,
            &selected,
            &[
                ("state", "completed"),
                ("action", "retry"),
                ("id", fx.completed.as_str()),
                ("id", fx.failed.as_str()),
                ("id", fx.waiting.as_str()),
            ],
        )
        .await;
    let back = retried.redirected();
    assert!(back.contains("retried%202%20of%203"), "{back}");
    for id in [&fx.completed, &fx.failed] {
        assert_eq!(fx.state(id).await, Some(JobState::Waiting));
    }
    let promoted = s
        .post(
            &app,
            &selected,
            &[("action", "promote"), ("id", fx.delayed.as_str())],
        )
        .await;
    promoted.redirected();
    assert_eq!(fx.state(&fx.delayed).await, Some(JobState::Waiting));
    let removed = s
        .post(
            &app,
            &selected,
            &[
                ("action", "remove"),
                ("id", fx.delayed.as_str()),
                ("id", "no-such-job"),
            ],
        )
        .await;
    let back = removed.redirected();
    assert!(back.contains("removed%201%20of%202"), "{back}");
    assert!(!fx.exists(&fx.delayed).await);
    get(&app, back).await.ok();
    let none = s.post(&app, &selected, &[("action", "remove")]).await;
    none.refused(StatusCode::BAD_REQUEST, "`id`");
    let odd = s
        .post(
            &app,
            &selected,
            &[("action", "explode"), ("id", fx.waiting.as_str())],
        )
        .await;
    odd.refused(StatusCode::BAD_REQUEST, "`action`");
    assert!(fx.exists(&fx.waiting).await);
}
both_stores!(selected_jobs_are_retried_promoted_and_removed);

async fn schedulers_are_upserted_and_removed(store: Store) {
    use bullmq::backend::Schedulers as _;
    let fx = Fixture::new(store).await;
    let app = fx.app();
    let page = fx.path("/schedulers");
    let s = Session::open(&app, &page).await;
    assert!(s.get(&app, &page).await.ok().contains("upsert"));
    let every = s
        .post(
            &app,
            &page,
            &[
                ("id", "every-minute"),
                ("every", "60000"),
                ("name", "tick"),
                ("data", "{\"k\":1}"),
            ],
        )
        .await;
    every.redirected();
    let cron = s
        .post(
            &app,
            &page,
            &[
                ("id", "nightly"),
                ("pattern", "0 3 * * *"),
                ("tz", "Europe/London"),
            ],
        )
        .await;
    cron.redirected();
    let backend = fx.queue.backend();
    assert_eq!(backend.get_job_schedulers_count().await.unwrap(), 2);
    let record = backend
        .get_job_scheduler("every-minute")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.name, "tick");
    assert_eq!(
        record.schedule.every,
        Some(std::time::Duration::from_secs(60))
    );
    let listed = get(&app, every.location()).await;
    assert!(
        listed.ok().contains("nightly") && listed.body.contains("Done: "),
        "{}",
        listed.body
    );
    for (fields, field) in [
        (
            vec![("id", "x"), ("every", "1000"), ("pattern", "* * * * *")],
            "`every`",
        ),
        (vec![("id", "x")], "`pattern`"),
        (vec![("id", "x"), ("pattern", "not a cron")], "`schedule`"),
        (vec![("id", " "), ("every", "1000")], "`id`"),
        (
            vec![("id", "x"), ("every", "1000"), ("data", "{nope")],
            "`data`",
        ),
    ] {
        let refused = s.post(&app, &page, &fields).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{fields:?}");
        assert!(refused.body.contains(field), "{fields:?}: {}", refused.body);
    }
    assert_eq!(backend.get_job_schedulers_count().await.unwrap(), 2);
    let removed = s
        .post(&app, &format!("{page}/every-minute/remove"), &[])
        .await;
    removed.redirected();
    assert_eq!(backend.get_job_schedulers_count().await.unwrap(), 1);
    assert!(
        backend
            .get_job_scheduler("every-minute")
            .await
            .unwrap()
            .is_none()
    );
    let again = s
        .post(&app, &format!("{page}/every-minute/remove"), &[])
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
}
both_stores!(schedulers_are_upserted_and_removed);
