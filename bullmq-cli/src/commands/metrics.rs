//! `metrics QUEUE`: completed and failed jobs per minute, or the Prometheus text.

use bullmq::backend::Metrics;
use bullmq::job::FinishedState;
use serde_json::{Value, json};

use crate::context::Ctx;
use crate::fail::Failure;
use crate::output;

fn series(m: &Metrics) -> Value {
    json!({
        "total": m.total,
        "points": m.count,
        "prev_ts": m.prev_ts,
        "prev_count": m.prev_count,
        "per_minute": m.data,
    })
}

pub(super) async fn run(
    ctx: &Ctx,
    queue_name: &str,
    prometheus: bool,
    points: u32,
) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let fail = |e: bullmq::Error| ctx.store.error("read the metrics of", queue_name, &e);
    if prometheus {
        let text = queue.export_prometheus_metrics(&[]).await.map_err(fail)?;
        return output::print(&text);
    }
    let end = i64::from(points) - 1;
    let completed = queue
        .get_metrics(FinishedState::Completed, 0, end)
        .await
        .map_err(fail)?;
    let failed = queue
        .get_metrics(FinishedState::Failed, 0, end)
        .await
        .map_err(fail)?;
    let item = json!({
        "queue": queue_name,
        "completed": series(&completed),
        "failed": series(&failed),
    });
    output::one(ctx.format, &item, || {
        let recent = |m: &Metrics| {
            let shown: Vec<String> = m.data.iter().take(10).map(u64::to_string).collect();
            if shown.is_empty() {
                "-".to_owned()
            } else {
                shown.join(" ")
            }
        };
        let mut table = output::table(&["SERIES", "TOTAL", "LAST MINUTES (newest first)"]);
        table.add_row(vec![
            "completed".to_owned(),
            completed.total.to_string(),
            recent(&completed),
        ]);
        table.add_row(vec![
            "failed".to_owned(),
            failed.total.to_string(),
            recent(&failed),
        ]);
        table.to_string()
    })
}
