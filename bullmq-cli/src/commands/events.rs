//! `events QUEUE --follow`: the queue's events, one line each, until ctrl-c or `--limit`.

use bullmq::{QueueEvents, QueueEventsOptions};
use serde_json::{Map, Value, json};

use crate::cli::Format;
use crate::context::Ctx;
use crate::fail::Failure;
use crate::output;

pub(super) async fn run(ctx: &Ctx, queue_name: &str, limit: Option<u64>) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let fail = |e: bullmq::Error| ctx.store.error("follow the events of", queue_name, &e);
    // Autorun: the reader starts reading on a handle of its own at once.
    let events =
        QueueEvents::new(queue.backend().clone(), QueueEventsOptions::new()).map_err(fail)?;
    let mut subscription = events.subscribe();
    events.wait_until_ready().await.map_err(fail)?;
    eprintln!("following the events of queue {queue_name:?} (ctrl-c to stop)");
    let mut seen = 0_u64;
    loop {
        if limit.is_some_and(|l| seen >= l) {
            break;
        }
        let next = tokio::select! {
            event = subscription.next_event() => event,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(event) = next else { break };
        seen += 1;
        let mut fields = Map::new();
        for (k, v) in &event.fields {
            if k != "event" {
                fields.insert(k.clone(), Value::String(v.clone()));
            }
        }
        let item = json!({
            "id": event.id.as_str(),
            "event": event.event.name(),
            "job_id": event.event.job_id(),
            "fields": fields,
        });
        match ctx.format {
            // One line per event, whatever the format: a stream has no end to close an array at.
            Format::Json | Format::Jsonl => output::print(&item.to_string())?,
            Format::Text => {
                let rest: Vec<String> = event
                    .fields
                    .iter()
                    .filter(|(k, _)| k != "event" && k != "jobId")
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                output::print(&format!(
                    "{} {:<18} {} {}",
                    event.id.as_str(),
                    event.event.name(),
                    event.event.job_id().unwrap_or("-"),
                    rest.join(" ")
                ))?;
            }
        }
    }
    events.close().await;
    Ok(())
}
