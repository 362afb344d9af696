//! The fixture: a queue on either store with jobs in several states, the dashboard nested
//! under `/admin`, and a browser-like session (cookie and CSRF token).

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    AnyBackend, JobError, JobId, JobOptions, Prefix, Queue, QueueName, Worker, WorkerOptions,
};
use bullmq_dashboard::{Access, Connection, Dashboard};
use bullmq_test_support::postgres::SchemaGuard;
use bullmq_test_support::{PrefixGuard, database_url, eventually, redis_url, unique_name};
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;

/// The password put in every connection URL: no page may show it.
pub const SECRET: &str = "hunter2-dashboard-secret";
/// The connection's name in the dashboard.
pub const CONN: &str = "main";
/// A 10 MiB return value's size.
pub const BIG: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Redis,
    Postgres,
}

enum Guard {
    Redis(PrefixGuard),
    Postgres(SchemaGuard),
}

pub struct Fixture {
    pub queue: Queue<AnyBackend>,
    pub name: String,
    pub failed: JobId,
    pub completed: JobId,
    pub big: JobId,
    pub delayed: JobId,
    pub waiting: JobId,
    guard: Guard,
}

/// `url` with `SECRET` as its password.
fn with_secret(url: &str, user: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) if !rest.contains('@') => format!("{scheme}://{user}:{SECRET}@{rest}"),
        Some((scheme, rest)) => {
            let (userinfo, host) = rest.split_once('@').unwrap();
            let user = userinfo.split(':').next().unwrap();
            format!("{scheme}://{user}:{SECRET}@{host}")
        }
        None => url.to_owned(),
    }
}

impl Fixture {
    /// A queue with a completed job, a failed one, one that returned 10 MiB, a delayed one
    /// and a waiting one.
    pub async fn new(store: Store) -> Self {
        let name = unique_name("dash");
        let qn = QueueName::new(name.clone()).unwrap();
        let (backend, guard): (AnyBackend, Guard) = match store {
            Store::Redis => {
                let prefix = PrefixGuard::new();
                let options =
                    RedisOptions::new(redis_url()).prefix(Prefix::new(prefix.as_str()).unwrap());
                (
                    RedisBackend::connect(&options, qn.clone())
                        .await
                        .unwrap()
                        .into(),
                    Guard::Redis(prefix),
                )
            }
            Store::Postgres => {
                let schema = SchemaGuard::new("dash");
                (schema.backend(&name).await.into(), Guard::Postgres(schema))
            }
        };
        let queue = Queue::try_new(qn.clone(), backend.clone())
            .expect("the backend is bound to this queue");
        let completed = queue
            .add("ok", &serde_json::json!({"n": 1}), JobOptions::default())
            .await
            .unwrap()
            .id;
        let failed = queue
            .add(
                "fail-one",
                &serde_json::json!({"n": 2}),
                JobOptions::default(),
            )
            .await
            .unwrap()
            .id;
        let big = queue
            .add("big", &serde_json::json!({"n": 3}), JobOptions::default())
            .await
            .unwrap()
            .id;
        let worker = Worker::new(
            qn.clone(),
            backend.clone(),
            WorkerOptions::default(),
            |job: bullmq::ActiveJob<AnyBackend>, _| async move {
                match job.name.as_str() {
                    "fail-one" => Err(JobError::failed("boom")),
                    "big" => Ok(serde_json::Value::String("x".repeat(BIG))),
                    _ => Ok(serde_json::json!("done")),
                }
            },
        )
        .await
        .unwrap();
        let q = &queue;
        eventually(
            "the seeded jobs to finish",
            Duration::from_secs(30),
            || async move {
                let count = |state| async move {
                    q.get_job_count_by_types(&[bullmq::job::JobType::State(state)])
                        .await
                        .unwrap()
                };
                count(bullmq::job::JobState::Completed).await == 2
                    && count(bullmq::job::JobState::Failed).await == 1
            },
        )
        .await;
        worker.close().await;
        let delayed = queue
            .add(
                "later",
                &serde_json::json!({}),
                JobOptions {
                    delay: Some(Duration::from_secs(3600)),
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap()
            .id;
        let waiting = queue
            .add(
                "needle-job",
                &serde_json::json!({"find": "me"}),
                JobOptions::default(),
            )
            .await
            .unwrap()
            .id;
        Self {
            queue,
            name,
            failed,
            completed,
            big,
            delayed,
            waiting,
            guard,
        }
    }

    /// The dashboard's connection to the fixture's store, its URL carrying [`SECRET`].
    pub fn connection(&self) -> Connection {
        match &self.guard {
            Guard::Redis(prefix) => {
                Connection::url(with_secret(&redis_url(), "default")).prefix(prefix.as_str())
            }
            Guard::Postgres(schema) => {
                Connection::url(with_secret(&database_url(), "postgres")).schema(schema.as_str())
            }
        }
    }

    /// The dashboard with full access for everyone, nested under `/admin`.
    pub fn app(&self) -> Router {
        self.app_with(|b| b.authorize(|_, _, _| Access::Full))
    }

    /// The dashboard as `configure` sets it up, nested under `/admin`.
    pub fn app_with(
        &self,
        configure: impl FnOnce(bullmq_dashboard::DashboardBuilder) -> bullmq_dashboard::DashboardBuilder,
    ) -> Router {
        let dashboard = configure(Dashboard::builder().connection(CONN, self.connection()))
            .build()
            .unwrap();
        Router::new().nest("/admin", dashboard)
    }

    /// `/admin/c/main/q/<queue>` and what follows.
    /// The app, and a browser session opened on `rest` of the queue's pages.
    pub async fn browse(&self, rest: &str) -> (Router, Session) {
        let app = self.app();
        let session = Session::open(&app, &self.path(rest)).await;
        (app, session)
    }

    pub fn path(&self, rest: &str) -> String {
        format!("/admin/c/{CONN}/q/{}{rest}", self.name)
    }

    /// The state `id` is in now.
    pub async fn state(&self, id: &JobId) -> Option<bullmq::job::JobState> {
        self.queue.get_job_state(id).await.unwrap()
    }

    /// Whether job `id` still exists.
    pub async fn exists(&self, id: &JobId) -> bool {
        self.queue.get_job(id).await.unwrap().is_some()
    }

    /// Writes a job the store cannot decode; answers its id.
    pub async fn corrupt_job(&self) -> JobId {
        let id = self
            .queue
            .add("corrupt", &serde_json::json!({}), JobOptions::default())
            .await
            .unwrap()
            .id;
        match &self.guard {
            Guard::Redis(prefix) => {
                let mut con = bullmq_test_support::redis().await;
                let key = format!("{}:{}:{}", prefix.as_str(), self.name, id.as_str());
                let _: i64 = redis::cmd("HSET")
                    .arg(&key)
                    .arg("opts")
                    .arg("attempts=3")
                    .query_async(&mut con)
                    .await
                    .unwrap();
            }
            Guard::Postgres(schema) => {
                let mut conn = bullmq_test_support::postgres::admin().await;
                let sql = format!(
                    "UPDATE {}.job SET opts = '\"odd\"'::jsonb WHERE queue = $1 AND id = $2",
                    schema.name().quoted()
                );
                let done = sqlx::query(&sql)
                    .bind(&self.name)
                    .bind(id.as_str())
                    .execute(&mut conn)
                    .await
                    .unwrap();
                assert_eq!(done.rows_affected(), 1);
            }
        }
        assert!(
            matches!(
                self.queue.get_job(&id).await,
                Err(bullmq::Error::JobDecode(_))
            ),
            "the job must be undecodable"
        );
        id
    }
}

/// What a request answered.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.status, StatusCode::OK, "{}", self.body);
        &self.body
    }

    /// Asserts the answer is a 303 and answers where it leads.
    #[track_caller]
    pub fn redirected(&self) -> &str {
        assert_eq!(self.status, StatusCode::SEE_OTHER, "{}", self.body);
        self.location()
    }

    /// Asserts the answer is `status` and its body names `field` (e.g. "`data`").
    #[track_caller]
    pub fn refused(&self, status: StatusCode, field: &str) {
        assert_eq!(self.status, status, "{}", self.body);
        assert!(self.body.contains(field), "{}", self.body);
    }

    pub fn location(&self) -> &str {
        self.header(header::LOCATION).unwrap_or("")
    }

    /// The header `name` as text, if it is there and is text.
    pub fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub async fn send(app: &Router, request: Request<Body>) -> Answer {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// A GET without cookies.
pub async fn get(app: &Router, path: &str) -> Answer {
    send(app, Request::get(path).body(Body::empty()).unwrap()).await
}

/// A browser's cookie and the token the pages sign its forms with.
pub struct Session {
    pub cookie: String,
    pub token: String,
}

impl Session {
    /// Loads `path` as a new browser does, keeping the cookie and the form token it got.
    pub async fn open(app: &Router, path: &str) -> Self {
        let answer = get(app, path).await;
        answer.ok();
        let set = answer.header(header::SET_COOKIE).expect("a CSRF cookie");
        assert!(
            set.contains("SameSite=Strict")
                && set.contains("HttpOnly")
                && set.contains("Path=/admin"),
            "{set}"
        );
        let cookie = set.split(';').next().unwrap().to_owned();
        let marker = "name=\"csrf\" value=\"";
        // A read-only page has no form, so no token.
        let token = answer.body.find(marker).map_or_else(String::new, |at| {
            answer.body[at + marker.len()..]
                .split('"')
                .next()
                .unwrap()
                .to_owned()
        });
        Self { cookie, token }
    }

    pub async fn get(&self, app: &Router, path: &str) -> Answer {
        send(
            app,
            Request::get(path)
                .header(header::COOKIE, &self.cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await
    }

    /// A POST of the job action `action` (retry, promote, remove) on job `id`.
    pub async fn job_action(&self, app: &Router, fx: &Fixture, id: &JobId, action: &str) -> Answer {
        let path = fx.path(&format!("/jobs/{}/{action}", id.as_str()));
        self.post(app, &path, &[]).await
    }

    /// A POST of `fields` with the cookie and the token.
    pub async fn post(&self, app: &Router, path: &str, fields: &[(&str, &str)]) -> Answer {
        let mut all = vec![("csrf", self.token.as_str())];
        all.extend_from_slice(fields);
        post_raw(app, path, Some(&self.cookie), &all).await
    }
}

/// `fields` form-encoded.
pub fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A POST with the cookie given (if any) and exactly `fields`.
pub async fn post_raw(
    app: &Router,
    path: &str,
    cookie: Option<&str>,
    fields: &[(&str, &str)],
) -> Answer {
    let mut request =
        Request::post(path).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        request = request.header(header::COOKIE, cookie);
    }
    send(app, request.body(Body::from(form(fields))).unwrap()).await
}

/// Runs one case on Redis and on PostgreSQL, as two tests.
#[macro_export]
macro_rules! both_stores {
    ($case:ident) => {
        mod $case {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$case($crate::support::Store::Redis).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$case($crate::support::Store::Postgres).await;
            }
        }
    };
}
