//! `workers QUEUE`: the workers connected to a queue, from either runtime.

use serde_json::{Value, json};

use crate::context::Ctx;
use crate::fail::Failure;
use crate::output;

pub(super) async fn run(ctx: &Ctx, queue_name: &str) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let workers = queue
        .get_workers()
        .await
        .map_err(|e| ctx.store.error("list the workers of", queue_name, &e))?;
    let items: Vec<Value> = workers
        .iter()
        .map(|w| {
            json!({
                "name": w.name,
                "addr": w.addr,
                "age_secs": w.age,
                "idle_secs": w.idle,
            })
        })
        .collect();
    output::list(ctx.format, &items, || {
        if items.is_empty() {
            return format!("no workers connected to queue {queue_name:?}");
        }
        let mut table = output::table(&["NAME", "ADDRESS", "AGE (s)", "IDLE (s)"]);
        for w in &workers {
            let n = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
            table.add_row(vec![w.name.clone(), w.addr.clone(), n(w.age), n(w.idle)]);
        }
        table.to_string()
    })
}
