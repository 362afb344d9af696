//! The overview's server time for many queues: `BENCH_QUEUES` queues (100 by default) on
//! Redis and on PostgreSQL, each with a few jobs; the median and worst of 20 renders.
//!
//! `cargo bench -p bullmq-dashboard --bench overview` (`-- --test` for one quick round).
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{AnyBackend, JobOptions, Prefix, Queue, QueueName};
use bullmq_dashboard::{Access, Connection, Dashboard};
use bullmq_test_support::postgres::SchemaGuard;
use bullmq_test_support::{PrefixGuard, database_url, redis_url};
use tower::ServiceExt as _;

async fn fill(backend: &AnyBackend, queues: usize) {
    use bullmq::backend::Lifecycle as _;
    for i in 0..queues {
        let name = QueueName::new(format!("bench-{i:03}")).unwrap();
        let queue = Queue::try_new(name.clone(), backend.for_queue(&name, None))
            .expect("the backend is bound to this queue");
        for _ in 0..3 {
            queue
                .add("job", &serde_json::json!({"i": i}), JobOptions::default())
                .await
                .unwrap();
        }
    }
}

async fn measure(label: &str, connection: Connection, rounds: usize) {
    let app = Dashboard::builder()
        .connection("bench", connection)
        .authorize(|_, _, _| Access::Full)
        .build()
        .unwrap();
    let mut times = Vec::with_capacity(rounds);
    // The first render connects; it is not counted.
    for round in 0..=rounds {
        let start = Instant::now();
        let response = app
            .clone()
            .oneshot(Request::get("/").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        if round > 0 {
            times.push(start.elapsed());
        }
    }
    times.sort();
    let median = times[times.len() / 2];
    let worst = times.last().copied().unwrap_or(Duration::ZERO);
    println!("overview {label}: median {median:?}, worst {worst:?} over {rounds} renders");
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let queues: usize = std::env::var("BENCH_QUEUES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 3 } else { 100 });
    let rounds = if quick { 1 } else { 20 };

    let prefix = PrefixGuard::new();
    let options = RedisOptions::new(redis_url()).prefix(Prefix::new(prefix.as_str()).unwrap());
    let redis: AnyBackend = RedisBackend::connect(&options, QueueName::new("bench").unwrap())
        .await
        .unwrap()
        .into();
    let schema = SchemaGuard::new("dashbench");
    let postgres: AnyBackend = schema.backend("bench").await.into();
    let stores = [
        (
            "redis",
            redis,
            Connection::url(redis_url()).prefix(prefix.as_str()),
        ),
        (
            "postgres",
            postgres,
            Connection::url(database_url()).schema(schema.as_str()),
        ),
    ];
    for (store, backend, connection) in stores {
        fill(&backend, queues).await;
        measure(&format!("{store}, {queues} queues"), connection, rounds).await;
    }
}
