//! A Node.js producer, a Rust worker: Node.js BullMQ 6.7.6 adds jobs to a queue and this
//! process works them, with the data, options and results both runtimes read the same way.
//!
//! `npm ci --prefix tests/node` once, then `cargo run --example node_producer`
//! (Redis at `REDIS_URL`).

use std::error::Error;
use std::process::Command;
use std::time::Duration;

use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

/// The Node.js side: add two jobs to `node-producer`, under `BULLMQ_PREFIX`.
const PRODUCER: &str = r#"
import { Queue } from 'bullmq';
const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const connection = { host: url.hostname, port: Number(url.port || 6379) };
const queue = new Queue('node-producer', { connection, prefix: process.env.BULLMQ_PREFIX ?? 'bull' });
for (const [name, data] of [['resize', { width: 320 }], ['resize', { width: 640 }]]) {
  const job = await queue.add(name, data, { attempts: 2, priority: 1 });
  console.log(`node added job ${job.id} ${JSON.stringify(job.data)}`);
}
await queue.close();
"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let node = Command::new("node")
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/node"))
        .args(["--input-type=module", "-e", PRODUCER])
        .output()?;
    if !node.status.success() {
        return Err(format!("node: {}", String::from_utf8_lossy(&node.stderr)).into());
    }
    print!("{}", String::from_utf8_lossy(&node.stdout));

    let queue = Queue::from_backend(env::redis("node-producer").await?)?;
    let events = QueueEvents::new(queue.backend().clone(), QueueEventsOptions::default())?;
    let worker = Worker::from_queue(
        &queue,
        WorkerOptions::new(),
        |job: ActiveJob<DefaultBackend>, _: CancellationToken| async move {
            let width = job.data_as::<serde_json::Value>()?["width"]
                .as_u64()
                .unwrap_or(0);
            println!(
                "rust processed job {} (attempts {:?}): width {width}",
                job.id, job.opts.attempts
            );
            Ok(serde_json::json!({ "thumbnail": width / 4 }))
        },
    )
    .await?;
    // One job at a time, in the order Node.js added them: the second is the last.
    let last = JobId::from("2");
    events
        .wait_until_finished(&last, Some(Duration::from_secs(10)))
        .await?;
    worker.close().await;
    events.close().await;
    Ok(())
}

// Output:
// node added job 1 {"width":320}
// node added job 2 {"width":640}
// rust processed job 1 (attempts Some(2)): width 320
// rust processed job 2 (attempts Some(2)): width 640
