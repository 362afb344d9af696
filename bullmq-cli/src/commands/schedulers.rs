//! `schedulers QUEUE`: a queue's job schedulers, by next run.

use bullmq::JobScheduler;
use serde_json::{Value, json};

use crate::context::Ctx;
use crate::fail::Failure;
use crate::output;
use crate::values;

pub(super) async fn run(ctx: &Ctx, queue_name: &str) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let schedulers = JobScheduler::new(queue.backend().clone());
    let records = schedulers.list(0, -1, true).await.map_err(|e| {
        Failure::failed(format!(
            "cannot list the schedulers of queue {queue_name:?} on {}: {e}; check the server's logs",
            ctx.store.target()
        ))
    })?;
    let ms = |d: Option<std::time::Duration>| {
        d.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    };
    let items: Vec<Value> = records
        .iter()
        .map(|r| {
            json!({
                "id": r.id,
                "name": r.name,
                "next_millis": r.next_millis,
                "pattern": r.schedule.pattern,
                "every_ms": ms(r.schedule.every),
                "tz": r.schedule.tz,
                "limit": r.schedule.limit,
                "iteration_count": r.iteration_count,
                "template_data": r.template_data.as_deref().map(|d| values::json_of(d, ctx.full)),
            })
        })
        .collect();
    output::list(ctx.format, &items, || {
        if items.is_empty() {
            return format!("no schedulers in queue {queue_name:?}");
        }
        let mut table = output::table(&["ID", "NAME", "SCHEDULE", "NEXT RUN", "ITERATIONS"]);
        for r in &records {
            let schedule = r.schedule.pattern.clone().unwrap_or_else(|| {
                ms(r.schedule.every).map_or_else(|| "-".to_owned(), |ms| format!("every {ms} ms"))
            });
            table.add_row(vec![
                r.id.clone(),
                r.name.clone(),
                schedule,
                output::time(r.next_millis),
                r.iteration_count.to_string(),
            ]);
        }
        table.to_string()
    })
}
