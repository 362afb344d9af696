//! `queues`: every queue under the prefix or in the schema, with counts, paused, workers.

use serde_json::{Map, Value, json};

use crate::context::Ctx;
use crate::fail::Failure;
use crate::output;
use crate::store::queue_on;

/// A state's name as a JSON key: in `snake_case` (`waiting_children`).
pub(super) fn key(state: &str) -> String {
    state.replace('-', "_")
}

pub(super) async fn run(ctx: &Ctx) -> Result<(), Failure> {
    // Any valid name: the backend is only a connection to list and reach the queues.
    let backend = ctx.store.backend("bullmq-cli").await?;
    let names = backend.queue_names().await.map_err(|e| {
        Failure::failed(format!(
            "cannot list the queues on {}: {}; {}",
            ctx.store.target(),
            crate::fail::cause(&e),
            crate::fail::fix_for(&e)
        ))
    })?;
    let mut items = Vec::with_capacity(names.len());
    for name in names {
        let queue = queue_on(&backend, name.clone());
        let fail = |e: bullmq::Error| ctx.store.error("read", name.as_str(), &e);
        let counts = queue.get_job_counts(&[]).await.map_err(fail)?;
        let paused = queue.is_paused().await.map_err(fail)?;
        let workers = queue.get_workers_count().await.map_err(fail)?;
        let mut by_state = Map::new();
        for (state, count) in counts {
            by_state.insert(key(state.as_str()), json!(count));
        }
        items.push(json!({
            "name": name.as_str(),
            "paused": paused,
            "workers": workers,
            "counts": by_state,
        }));
    }
    output::list(ctx.format, &items, || text(&items))
}

fn text(items: &[Value]) -> String {
    if items.is_empty() {
        return "no queues".to_owned();
    }
    let states = [
        "waiting",
        "prioritized",
        "delayed",
        "active",
        "completed",
        "failed",
        "waiting_children",
    ];
    let mut header = vec!["QUEUE", "PAUSED", "WORKERS"];
    header.extend([
        "WAITING",
        "PRIORITIZED",
        "DELAYED",
        "ACTIVE",
        "COMPLETED",
        "FAILED",
        "WAITING-CHILDREN",
    ]);
    let mut table = output::table(&header);
    for item in items {
        let mut row = vec![
            item["name"].as_str().unwrap_or_default().to_owned(),
            if item["paused"] == true { "yes" } else { "no" }.to_owned(),
            item["workers"].to_string(),
        ];
        row.extend(states.iter().map(|s| item["counts"][*s].to_string()));
        table.add_row(row);
    }
    table.to_string()
}
