//! A small application written against bullmq 0.1.0 (the last packaged version), kept as it
//! was: `.ci/previous-release.sh` builds it against today's crates, where it must build with
//! deprecation warnings only. It uses what an application upgrade tripped over: generic code
//! over the store through `bullmq::backend`, a queue named beside its backend, schedules with
//! raw Unix-millisecond fields, a delay given in raw milliseconds, `serde_json::from_str` data.
//! It is built, not run.

use std::time::Duration;

use bullmq::backend::Backend;
use bullmq::redis::{RedisBackend, RedisOptions};
use bullmq::{
    ActiveJob, Backoff, CancellationToken, FlowJob, FlowProducer, JobError, JobOptions,
    JobScheduler, JobTemplate, KeepJobs, Queue, QueueName, RepeatOptions, Worker, WorkerOptions,
};

/// Adds a welcome mail on any store.
async fn welcome<B: Backend>(queue: &Queue<B>, to: &str) -> bullmq::Result<String> {
    let opts = JobOptions::new()
        .attempts(3)
        .backoff(Backoff::exponential(Duration::from_secs(1)))
        .remove_on_complete(KeepJobs::Number(100));
    let job = queue.add("welcome", &serde_json::json!({ "to": to }), opts).await?;
    Ok(job.id.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = QueueName::new("mails")?;
    let options = RedisOptions::new("redis://127.0.0.1:6379");
    let backend = RedisBackend::connect(&options, name.clone()).await?;
    let queue = Queue::try_new(name.clone(), backend.clone()).expect("the backend is bound to this queue");
    println!("added {}", welcome(&queue, "ada@example.com").await?);

    let worker = Worker::new(
        name.clone(),
        backend.clone(),
        WorkerOptions::default(),
        |job: ActiveJob<RedisBackend>, _: CancellationToken| async move {
            if job.data.contains("later") {
                return Err(JobError::Delay { until: job.timestamp + 60_000 });
            }
            Ok(serde_json::json!({ "sent": true }))
        },
    )
    .await?;

    let schedule = RepeatOptions {
        pattern: Some("0 9 * * 1".to_owned()),
        tz: Some("Europe/Paris".to_owned()),
        start_date: Some(1_767_225_600_000),
        ..RepeatOptions::default()
    };
    let template = JobTemplate::named("digest").data(serde_json::from_str::<serde_json::Value>(
        r#"{"kind":"weekly"}"#,
    )?);
    JobScheduler::new(backend.clone())
        .upsert("weekly-digest", &schedule, template)
        .await?;

    let flows = FlowProducer::new(backend.clone());
    let parent = FlowJob::new(name.clone(), "batch", serde_json::from_str::<serde_json::Value>("{}")?)
        .child(FlowJob::new(name, "part", serde_json::json!({ "n": 1 })));
    flows.add(parent).await?;

    worker.close().await;
    Ok(())
}
