//! `pause QUEUE` / `resume QUEUE`.

use serde_json::json;

use crate::context::Ctx;
use crate::fail::Failure;
use crate::output;

pub(super) async fn run(ctx: &Ctx, queue_name: &str, pause: bool) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let (command, done) = if pause {
        ("pause", "paused")
    } else {
        ("resume", "resumed")
    };
    let result = if pause {
        queue.pause().await
    } else {
        queue.resume().await
    };
    result.map_err(|e| ctx.store.error(command, queue_name, &e))?;
    let item = json!({"command": command, "queue": queue_name, "paused": pause});
    output::one(ctx.format, &item, || format!("{done} queue {queue_name:?}"))
}
