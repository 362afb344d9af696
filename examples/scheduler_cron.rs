//! A cron schedule in a time zone: every Monday at 09:00 in Paris, from a start date given
//! as ISO 8601 text (as Node.js takes it). The scheduler stores its next run, in UTC.
//!
//! `cargo run --example scheduler_cron --features scheduler` (Redis at `REDIS_URL`).

use std::error::Error;

use bullmq::chrono::DateTime;
use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let schedulers = JobScheduler::new(env::redis("scheduler-cron").await?);
    let weekly = RepeatOptions::cron("0 9 * * 1")
        .tz("Europe/Paris")
        .start_date_iso("2030-01-01T00:00:00Z")?
        .limit(52);
    let template = JobTemplate::named("weekly-report").data(serde_json::json!({ "team": "ops" }));
    schedulers.upsert("ops-report", &weekly, template).await?;

    let stored = schedulers.get("ops-report").await?.ok_or("no scheduler")?;
    let next = stored.next_millis.ok_or("no next run")?;
    let next = DateTime::from_timestamp_millis(i64::try_from(next)?).ok_or("out of range")?;
    println!(
        "pattern {:?} in {:?}",
        stored.schedule.pattern.unwrap_or_default(),
        stored.schedule.tz.unwrap_or_default()
    );
    println!("first run {}", next.to_rfc3339());
    let queue = Queue::from_backend(env::redis("scheduler-cron").await?)?;
    println!("delayed jobs: {}", queue.get_delayed_count(None).await?);
    schedulers.remove("ops-report").await?;
    Ok(())
}

// Output:
// pattern "0 9 * * 1" in "Europe/Paris"
// first run 2030-01-07T08:00:00+00:00
// delayed jobs: 1
