//! `concurrency QUEUE [N | --remove]` and `rate-limit QUEUE [--max N --duration MS |
//! --remove]`: the queue's global limits (across all workers), read or set.

use std::time::Duration;

use serde_json::json;

use crate::cli::{ConcurrencyArgs, RateLimitArgs};
use crate::context::Ctx;
use crate::fail::Failure;
use crate::output;

pub(super) async fn concurrency(ctx: &Ctx, args: &ConcurrencyArgs) -> Result<(), Failure> {
    let name = args.queue.as_str();
    let queue = ctx.store.queue(name).await?;
    let fail = |e: bullmq::Error| ctx.store.error("set the concurrency of", name, &e);
    let read = |e: bullmq::Error| ctx.store.error("read the concurrency of", name, &e);
    if let Some(n) = args.set {
        queue.set_global_concurrency(n).await.map_err(fail)?;
    } else if args.remove {
        queue.remove_global_concurrency().await.map_err(fail)?;
    }
    let now = queue.get_global_concurrency().await.map_err(read)?;
    let item = json!({"queue": name, "concurrency": now});
    output::one(ctx.format, &item, || match now {
        Some(n) => format!("queue {name:?}: at most {n} jobs at once, across all workers"),
        None => format!("queue {name:?}: no global concurrency limit"),
    })
}

pub(super) async fn rate_limit(ctx: &Ctx, args: &RateLimitArgs) -> Result<(), Failure> {
    let name = args.queue.as_str();
    let queue = ctx.store.queue(name).await?;
    let fail = |e: bullmq::Error| ctx.store.error("set the rate limit of", name, &e);
    let read = |e: bullmq::Error| ctx.store.error("read the rate limit of", name, &e);
    if let (Some(max), Some(ms)) = (args.max, args.duration) {
        queue
            .set_global_rate_limit(max, Duration::from_millis(ms))
            .await
            .map_err(fail)?;
    } else if args.remove {
        queue.remove_global_rate_limit().await.map_err(fail)?;
    }
    let now = queue.get_global_rate_limit().await.map_err(read)?;
    let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let item = json!({
        "queue": name,
        "max": now.as_ref().map(|l| l.max),
        "duration_ms": now.as_ref().map(|l| ms(l.duration)),
    });
    output::one(ctx.format, &item, || match &now {
        Some(l) => format!(
            "queue {name:?}: at most {} jobs per {} ms, across all workers",
            l.max,
            ms(l.duration)
        ),
        None => format!("queue {name:?}: no global rate limit"),
    })
}
