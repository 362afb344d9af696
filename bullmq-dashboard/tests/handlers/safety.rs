//! What the dashboard refuses: writes when read-only, actions without a matching CSRF
//! token, queues the hook hides; and what no page shows: a password.

use axum::http::StatusCode;
use axum::http::header;
use bullmq::backend::Schedulers as _;
use bullmq::job::{JobState, JobType};
use bullmq_dashboard::{Access, Connection, Dashboard};

use crate::both_stores;
use crate::support::{CONN, Fixture, SECRET, Session, Store, get, post_raw};

/// Every mutating endpoint, with fields that would make it act.
fn mutations(fx: &Fixture) -> Vec<(String, Vec<(&'static str, String)>)> {
    let job =
        |id: &bullmq::JobId, action: &str| fx.path(&format!("/jobs/{}/{action}", id.as_str()));
    vec![
        (job(&fx.failed, "retry"), vec![]),
        (job(&fx.delayed, "promote"), vec![]),
        (job(&fx.completed, "remove"), vec![]),
        (
            job(&fx.waiting, "update"),
            vec![("data", "{\"changed\":true}".to_owned())],
        ),
        (
            fx.path("/selected"),
            vec![
                ("action", "remove".to_owned()),
                ("id", fx.completed.as_str().to_owned()),
                ("id", fx.failed.as_str().to_owned()),
            ],
        ),
        (
            fx.path("/schedulers"),
            vec![
                ("id", "every-minute".to_owned()),
                ("every", "60000".to_owned()),
            ],
        ),
        (fx.path("/schedulers/every-minute/remove"), vec![]),
        (fx.path("/add"), vec![("name", "x".to_owned())]),
        (fx.path("/pause"), vec![]),
        (fx.path("/resume"), vec![]),
        (fx.path("/drain"), vec![("delayed", "1".to_owned())]),
        (fx.path("/clean"), vec![("state", "completed".to_owned())]),
        (
            fx.path("/obliterate"),
            vec![("confirm", fx.name.clone()), ("force", "1".to_owned())],
        ),
        (
            fx.path("/bulk"),
            vec![
                ("state", "failed".to_owned()),
                ("action", "retry".to_owned()),
            ],
        ),
        (
            fx.path("/bulk"),
            vec![
                ("state", "failed".to_owned()),
                ("action", "retry".to_owned()),
                ("q", "boom".to_owned()),
            ],
        ),
    ]
}

/// The queue's counts, pause flag, waiting job's data and scheduler count, to show nothing
/// changed.
async fn snapshot(fx: &Fixture) -> (Vec<(JobType, u64)>, bool, String, u64) {
    (
        fx.queue.get_job_counts(&[]).await.unwrap(),
        fx.queue.is_paused().await.unwrap(),
        fx.queue.get_job(&fx.waiting).await.unwrap().unwrap().data,
        fx.queue.backend().get_job_schedulers_count().await.unwrap(),
    )
}

async fn read_only_refuses_every_mutating_endpoint(store: Store) {
    let fx = Fixture::new(store).await;
    let before = snapshot(&fx).await;
    let read_only = fx.app_with(|b| b.authorize(|_, _, _| Access::Full).read_only(true));
    let no_hook = fx.app_with(|b| b);
    let hook_says_read = fx.app_with(|b| b.authorize(|_, _, _| Access::ReadOnly));
    for app in [&read_only, &no_hook, &hook_says_read] {
        let s = Session::open(app, &fx.path("")).await;
        let page = s.get(app, &fx.path("?state=failed")).await;
        assert!(
            !page.ok().contains("/retry\""),
            "no action buttons when read-only"
        );
        for (path, fields) in mutations(&fx) {
            let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let answer = s.post(app, &path, &fields).await;
            assert_eq!(
                answer.status,
                StatusCode::FORBIDDEN,
                "{path}: {}",
                answer.body
            );
            assert!(answer.body.contains("read-only"), "{}", answer.body);
        }
    }
    assert_eq!(snapshot(&fx).await, before);
}
both_stores!(read_only_refuses_every_mutating_endpoint);

async fn an_action_without_a_matching_csrf_token_is_refused(store: Store) {
    let fx = Fixture::new(store).await;
    let before = snapshot(&fx).await;
    let app = fx.app();
    let s = Session::open(&app, &fx.path("")).await;
    let other = Session::open(&app, &fx.path("")).await;
    assert_ne!(s.cookie, other.cookie);
    for (path, fields) in mutations(&fx) {
        let mut fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        // No cookie, no token.
        let bare = post_raw(&app, &path, None, &fields).await;
        assert_eq!(bare.status, StatusCode::FORBIDDEN, "{path}: {}", bare.body);
        assert!(bare.body.contains("CSRF cookie"), "{}", bare.body);
        // The cookie without a token.
        let no_token = post_raw(&app, &path, Some(&s.cookie), &fields).await;
        assert_eq!(no_token.status, StatusCode::FORBIDDEN);
        assert!(
            no_token.body.contains("`csrf` is missing"),
            "{}",
            no_token.body
        );
        // A token signed for another browser's cookie.
        fields.push(("csrf", other.token.as_str()));
        let wrong = post_raw(&app, &path, Some(&s.cookie), &fields).await;
        assert_eq!(wrong.status, StatusCode::FORBIDDEN);
        assert!(wrong.body.contains("does not match"), "{}", wrong.body);
        // A token from another dashboard (another key) for this very cookie.
        let other_app = fx.app();
        let _ = Session::open(&other_app, &fx.path("")).await;
        fields.pop();
    }
    assert_eq!(snapshot(&fx).await, before);
}
both_stores!(an_action_without_a_matching_csrf_token_is_refused);

async fn a_queue_the_hook_hides_is_not_found(store: Store) {
    let fx = Fixture::new(store).await;
    let hidden = fx.name.clone();
    let app = fx.app_with(move |b| {
        b.authorize(move |parts, connection, queue| {
            assert_eq!(connection, CONN);
            if queue.as_str() == hidden && parts.headers.get("x-role").is_none() {
                Access::None
            } else {
                Access::Full
            }
        })
    });
    let overview = get(&app, "/admin").await;
    assert!(
        !overview.ok().contains(&fx.name),
        "the hidden queue is not listed"
    );
    for path in [
        fx.path(""),
        fx.path("/workers"),
        fx.path("/metrics"),
        fx.path("/schedulers"),
        fx.path("/live"),
        fx.path("/rows?state=failed"),
        fx.path(&format!("/jobs/{}", fx.failed.as_str())),
    ] {
        assert_eq!(
            get(&app, &path).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    let s = Session::open(&app, "/admin").await;
    for (path, fields) in mutations(&fx) {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(
            s.post(&app, &path, &fields).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    // With the header the hook asks for, the queue is there.
    let request = axum::http::Request::get(fx.path(""))
        .header("x-role", "admin")
        .body(axum::body::Body::empty())
        .unwrap();
    assert_eq!(
        crate::support::send(&app, request).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get(&app, "/admin/c/nope/q/x").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        fx.queue.get_job_state(&fx.failed).await.unwrap(),
        Some(JobState::Failed)
    );
}
both_stores!(a_queue_the_hook_hides_is_not_found);

async fn no_page_shows_a_secret_and_every_page_has_the_security_headers(store: Store) {
    let fx = Fixture::new(store).await;
    // A second connection that cannot be reached, its password in the URL too.
    let unreachable = format!("redis://default:{SECRET}@127.0.0.1:1");
    let dashboard = Dashboard::builder()
        .connection(CONN, fx.connection())
        .connection("down", Connection::url(unreachable))
        .authorize(|_, _, _| Access::Full)
        .build()
        .unwrap();
    let app = axum::Router::new().nest("/admin", dashboard);
    let pages = [
        "/admin".to_owned(),
        fx.path(""),
        fx.path("?state=failed"),
        fx.path(&format!("/jobs/{}", fx.failed.as_str())),
        fx.path("/schedulers"),
        fx.path("/workers"),
        fx.path("/metrics"),
        fx.path("/bulk?state=failed&action=retry"),
        "/admin/c/down/q/x".to_owned(),
    ];
    for path in &pages {
        let answer = get(&app, path).await;
        assert!(
            !answer.body.contains(SECRET),
            "{path} shows the password: {}",
            answer.body
        );
        let csp = answer.header(header::CONTENT_SECURITY_POLICY).unwrap_or("");
        assert!(
            csp.contains("frame-ancestors 'none'")
                && csp.contains("script-src 'self'")
                && !csp.contains("unsafe-inline"),
            "{path}: {csp}"
        );
        assert_eq!(
            answer.headers.get(header::X_CONTENT_TYPE_OPTIONS).unwrap(),
            "nosniff"
        );
        assert_eq!(
            answer.headers.get(header::REFERRER_POLICY).unwrap(),
            "no-referrer"
        );
    }
    let overview = get(&app, "/admin").await;
    assert!(
        overview.body.contains("down") && overview.body.contains("unavailable"),
        "{}",
        overview.body
    );
    assert!(
        overview.body.contains("127.0.0.1:1"),
        "the redacted URL is shown: {}",
        overview.body
    );
    assert_eq!(
        get(&app, "/admin/c/down/q/x").await.status,
        StatusCode::BAD_GATEWAY
    );
}
both_stores!(no_page_shows_a_secret_and_every_page_has_the_security_headers);

/// What the actions log, captured.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Self;
    fn make_writer(&'a self) -> Self {
        self.clone()
    }
}

async fn every_action_and_refusal_is_logged_without_a_secret(store: Store) {
    let fx = Fixture::new(store).await;
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let app = fx.app();
    let read_only = fx.app_with(|b| b.read_only(true));
    {
        // The test runs on one thread here, so the subscriber sees every event.
        let _guard = tracing::subscriber::set_default(subscriber);
        let s = Session::open(&app, &fx.path("")).await;
        s.job_action(&app, &fx, &fx.failed, "retry")
            .await
            .redirected();
        s.post(&app, &fx.path("/pause"), &[]).await.redirected();
        assert_eq!(
            post_raw(&app, &fx.path("/resume"), None, &[]).await.status,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            s.post(&read_only, &fx.path("/resume"), &[]).await.status,
            StatusCode::FORBIDDEN
        );
    }
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        log.contains("job action")
            && log.contains("action=retry")
            && log.contains(fx.failed.as_str()),
        "{log}"
    );
    assert!(
        log.contains("queue action") && log.contains("action=pause"),
        "{log}"
    );
    assert!(log.contains("action refused: CSRF"), "{log}");
    assert!(log.contains("action refused: read-only"), "{log}");
    assert!(!log.contains(SECRET), "{log}");
}

mod every_action_and_refusal_is_logged_without_a_secret {
    #[tokio::test(flavor = "current_thread")]
    async fn redis() {
        super::every_action_and_refusal_is_logged_without_a_secret(crate::support::Store::Redis)
            .await;
    }
    #[tokio::test(flavor = "current_thread")]
    async fn postgres() {
        super::every_action_and_refusal_is_logged_without_a_secret(crate::support::Store::Postgres)
            .await;
    }
}
