//! `job QUEUE ID`: everything about one job, its logs and its children included.

use bullmq::JobId;
use bullmq::backend::{DependenciesQuery, Range};
use serde_json::{Value, json};

use crate::context::Ctx;
use crate::fail::Failure;
use crate::job_rows::job_json;
use crate::output;
use crate::values;

/// Children listed per kind; more are counted, not listed.
const CHILDREN_SHOWN: u64 = 100;

pub(super) async fn run(ctx: &Ctx, queue_name: &str, id: &str) -> Result<(), Failure> {
    let queue = ctx.store.queue(queue_name).await?;
    let fail = |e: bullmq::Error| ctx.store.error("read a job of", queue_name, &e);
    let id = JobId::from(id);
    let Some(job) = queue.get_job(&id).await.map_err(fail)? else {
        return Err(Failure::failed(format!(
            "no job {:?} in queue {queue_name:?} on {}; check the id with `bullmq jobs {queue_name}`",
            id.as_str(),
            ctx.store.target()
        )));
    };
    let state = queue.get_job_state(&id).await.map_err(fail)?;
    let logs = queue
        .get_job_logs(&id, Range::ALL_OLDEST_FIRST)
        .await
        .map_err(fail)?;
    let query = DependenciesQuery::first_pages(CHILDREN_SHOWN);
    let deps = queue
        .job(id.clone())
        .get_dependencies(&query)
        .await
        .map_err(fail)?;
    let keys = |list: Option<Vec<String>>| list.unwrap_or_default();
    let children = json!({
        "processed": keys(deps.processed.map(|(l, _)| l.into_iter().map(|(k, _)| k).collect())),
        "unprocessed": keys(deps.unprocessed.map(|(l, _)| l)),
        "failed": keys(deps.failed.map(|(l, _)| l)),
        "ignored": keys(deps.ignored.map(|(l, _)| l.into_iter().map(|(k, _)| k).collect())),
    });
    let mut item = job_json(&job, state, ctx.full);
    if let Value::Object(map) = &mut item {
        map.insert("logs".to_owned(), json!(logs.logs));
        map.insert("logs_count".to_owned(), json!(logs.count));
        map.insert("children".to_owned(), children);
    }
    output::one(ctx.format, &item, || {
        text(&item, &job.data, job.return_value.as_deref(), ctx.full)
    })
}

fn text(item: &Value, data: &str, return_value: Option<&str>, full: bool) -> String {
    let s = |key: &str| match &item[key] {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut lines = vec![
        format!("id:             {}", s("id")),
        format!("name:           {}", s("name")),
        format!("state:          {}", s("state")),
        format!(
            "created:        {}",
            output::time(item["timestamp"].as_u64())
        ),
        format!(
            "processed:      {}",
            output::time(item["processed_on"].as_u64())
        ),
        format!(
            "finished:       {}",
            output::time(item["finished_on"].as_u64())
        ),
        format!(
            "attempts:       {} made, {} started",
            s("attempts_made"),
            s("attempts_started")
        ),
        format!("processed by:   {}", s("processed_by")),
        format!("progress:       {}", s("progress")),
        format!("options:        {}", item["opts"]),
        format!(
            "data:           {}",
            values::text_of(data, values::CUT, full)
        ),
        format!(
            "return value:   {}",
            return_value.map_or_else(|| "-".to_owned(), |v| values::text_of(v, values::CUT, full))
        ),
        format!("failed reason:  {}", s("failed_reason")),
        format!("parent:         {}", s("parent_key")),
    ];
    for kind in ["processed", "unprocessed", "failed", "ignored"] {
        let ids: Vec<String> = item["children"][kind]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if !ids.is_empty() {
            lines.push(format!("children {kind:<12} {}", ids.join(", ")));
        }
    }
    if let Some(trace) = item["stacktrace"].as_array().filter(|t| !t.is_empty()) {
        lines.push("stack traces:".to_owned());
        for t in trace {
            lines.push(format!("  {}", t.as_str().unwrap_or_default()));
        }
    }
    if let Some(logs) = item["logs"].as_array().filter(|l| !l.is_empty()) {
        lines.push(format!("logs ({}):", item["logs_count"]));
        for l in logs {
            lines.push(format!("  {}", l.as_str().unwrap_or_default()));
        }
    }
    lines.join("\n")
}
