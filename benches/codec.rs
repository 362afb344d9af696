//! The codec on a worker's and a producer's hot path: packing options for `add`, reading the
//! stored options and the whole job hash when a job is fetched, writing data as Node.js does
//! (against plain `serde_json`) and the data view a processor gets (compact text taken as it
//! is; `jsonb`'s spaced text rewritten).
//!
//! Run with `cargo bench --bench codec`; CI smoke-runs it with `-- --test`.

use std::hint::black_box;
use std::time::Duration;

use bullmq::{Backoff, Deduplication, Job, JobOptions, KeepJobs};
use bullmq_core::codec::{self, KeyStyle};
use criterion::{Criterion, criterion_group, criterion_main};

fn typical() -> JobOptions {
    JobOptions::new()
        .with_node_defaults()
        .attempts(5)
        .delay(Duration::from_secs(3))
        .backoff(Backoff::exponential(Duration::from_secs(1)).jitter(0.2))
        .remove_on_complete(KeepJobs::Number(1000))
        .remove_on_fail(KeepJobs::policy_age(Duration::from_secs(86_400)))
        .keep_logs(50)
        .deduplication(Deduplication::new("user-42").ttl(Duration::from_secs(5)))
}

fn bench(c: &mut Criterion) {
    let opts = typical();
    let stored = codec::options_to_json(&opts, KeyStyle::Short);
    let mut job = Job::new(
        "resize",
        r#"{"url":"https://example.com/a.png","w":640}"#.into(),
        opts.clone(),
        1,
    );
    job.processed_on = Some(1_700_000_000_500);
    job.attempts_started = 1;
    let hash = job.to_hash();

    let mut g = c.benchmark_group("codec");
    g.bench_function("options_to_msgpack", |b| {
        b.iter(|| codec::options_to_msgpack(black_box(&opts)));
    });
    g.bench_function("options_to_json", |b| {
        b.iter(|| codec::options_to_json(black_box(&opts), KeyStyle::Short));
    });
    g.bench_function("options_from_json", |b| {
        b.iter(|| codec::options_from_json(black_box(&stored)));
    });
    g.bench_function("job_from_hash", |b| {
        b.iter(|| Job::from_hash("1", black_box(hash.iter().map(|(k, v)| (*k, v.as_str())))));
    });
    let data = serde_json::json!({"url": "https://example.com/a b.png", "w": 640, "ratio": 1.5,
        "tags": ["x", "y"], "at": "2024-01-01T00:00:00Z"});
    g.bench_function("data_to_json_serde", |b| {
        b.iter(|| serde_json::to_string(black_box(&data)));
    });
    g.bench_function("data_to_json_js", |b| {
        b.iter(|| bullmq_core::json::to_string(black_box(&data)));
    });
    let compact = bullmq_core::json::to_string(&data).unwrap_or_default();
    g.bench_function("data_view_compact", |b| {
        b.iter(|| bullmq_core::json::js_view(black_box(&compact)).len());
    });
    let jsonb = r#"{"w": 640, "at": "2024-01-01T00:00:00Z", "url": "https://example.com/a b.png", "tags": ["x", "y"], "ratio": 1.5}"#;
    g.bench_function("data_view_jsonb", |b| {
        b.iter(|| bullmq_core::json::js_view(black_box(jsonb)).len());
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
