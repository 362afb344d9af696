//! Job rows another runtime wrote oddly (raw `UPDATE`/`INSERT`: jsonb of unexpected shapes,
//! counters at their limits), processed by a real `Worker`: each ends completed or failed with
//! a reason that names the field, none is lost (every state counted), none runs twice or
//! forever, and the listing getters return the good jobs and report the bad ones.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bullmq::JobOptions;
use bullmq::postgres::sqlx::{self, Row as _};
use serde_json::json;

use crate::support::odd_jobs::{End, assert_listed, counting_worker};
use crate::support::postgres::{SchemaGuard, admin};
use crate::support::wait::eventually;

/// How long the corpus may take to settle.
const WAIT: Duration = Duration::from_secs(30);

/// One odd row: its custom id, the options it is added with, the `SET` clause that makes it
/// odd afterwards, and how it must end.
struct Case {
    id: &'static str,
    attempts: u32,
    set: &'static str,
    end: End,
}

const fn case(id: &'static str, set: &'static str, end: End) -> Case {
    Case {
        id,
        attempts: 1,
        set,
        end,
    }
}

fn corpus() -> Vec<Case> {
    use End::{Completed, Failed};
    vec![
        // Options of the wrong types: read as absent, as `tonumber`/`::integer` would not read them.
        case(
            "opts-attempts-text",
            r#"opts = '{"attempts":"abc"}'"#,
            Completed(1),
        ),
        case(
            "opts-attempts-huge",
            r#"opts = '{"attempts":1e30}'"#,
            Completed(1),
        ),
        case(
            "opts-attempts-negative",
            r#"opts = '{"attempts":-4}'"#,
            Completed(1),
        ),
        case(
            "opts-wrong-types",
            r#"opts = '{"delay":"x","lifo":"yes","removeOnComplete":"z","backoff":7,"priority":"p"}'"#,
            Completed(1),
        ),
        case(
            "opts-nested-nulls",
            r#"opts = '{"attempts":null,"backoff":{"type":null,"delay":null},"removeOnFail":null}'"#,
            Completed(1),
        ),
        case("opts-empty-array", "opts = '[]'", Completed(1)),
        case(
            "opts-not-object",
            r#"opts = '"just text"'"#,
            Failed(0, "`opts`"),
        ),
        case("opts-json-null", "opts = 'null'", Failed(0, "`opts`")),
        // Data of every JSON shape is data.
        case("data-null", "data = 'null'", Completed(1)),
        case("data-string", r#"data = '"text"'"#, Completed(1)),
        case(
            "data-huge-number",
            "data = '123456789012345678901234567890'",
            Completed(1),
        ),
        // Results and traces of odd shapes, as Node reads them.
        case(
            "stacktrace-string",
            r#"stacktrace = '"not an array"'"#,
            Completed(1),
        ),
        case(
            "stacktrace-object",
            r#"stacktrace = '{"a":1}'"#,
            Completed(1),
        ),
        case(
            "stacktrace-mixed",
            r#"stacktrace = '[1, null, "x"]'"#,
            Completed(1),
        ),
        case(
            "progress-object",
            r#"progress = '{"nested":null}'"#,
            Completed(1),
        ),
        case("progress-string", r#"progress = '"half"'"#, Completed(1)),
        case(
            "return-value-odd",
            r#"return_value = '{"x":null}'"#,
            Completed(1),
        ),
        // Scalars at or past their sense.
        case("name-empty", "name = ''", Completed(1)),
        case("attempts-made-negative", "attempts_made = -5", Completed(1)),
        case("added-at-negative", "added_at_ms = -1", Completed(1)),
        case("delay-negative", "delay_ms = -10", Completed(1)),
        case("max-attempts-zero", "max_attempts = 0", Completed(1)),
        case(
            "stalled-count-max",
            "stalled_count = 2147483647",
            Completed(1),
        ),
        // Counters the commands increment, at `integer`'s limit.
        case(
            "attempts-started-max",
            "attempts_started = 2147483647",
            Completed(1),
        ),
        Case {
            id: "fail-attempts-made-max",
            attempts: 2,
            set: "attempts_made = 2147483646",
            end: Failed(1, "boom"),
        },
        // Flow fields pointing nowhere.
        case(
            "parent-nowhere",
            "parent_id = 'gone', parent_queue = 'nowhere', parent_key = 'nowhere:gone'",
            Completed(1),
        ),
        Case {
            id: "fail-parent-nowhere-fpof-text",
            attempts: 1,
            set: r#"parent_id = 'gone', parent_queue = 'nowhere', parent_key = 'nowhere:gone', opts = '{"fpof":"abc","failParentOnFailure":"abc"}'"#,
            end: Failed(1, "boom"),
        },
        Case {
            id: "fail-retried",
            attempts: 3,
            set: r#"opts = '{"attempts":3,"backoff":{"type":"fixed","delay":"soon"}}'"#,
            end: Failed(3, "boom"),
        },
        // A failure recorded for the worker to apply.
        case(
            "deferred-failure",
            "deferred_failure = 'written by another runtime'",
            Failed(0, "written by another runtime"),
        ),
    ]
}

#[tokio::test]
async fn odd_job_rows_all_end_in_a_state_once() {
    let schema = SchemaGuard::new("oddjobs").kept_if("BULLMQ_KEEP_SCHEMA");
    let name = "odd";
    let queue = schema.queue(name).await;
    let mut sql = admin().await;
    let table = format!("\"{}\".job", schema.as_str());
    let cases = corpus();
    let mut ids = Vec::new();
    for c in &cases {
        let opts = JobOptions::new().job_id(c.id).attempts(c.attempts);
        let id = queue.add("odd", &json!({"k": 1}), opts).await.unwrap().id;
        sqlx::query(&format!(
            "UPDATE {table} SET {} WHERE queue = $1 AND id = $2",
            c.set
        ))
        .bind(name)
        .bind(id.as_str())
        .execute(&mut sql)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", c.id));
        ids.push(id);
    }
    // A row inserted by hand, with only the columns that have no default.
    sqlx::query(&format!(
        "INSERT INTO {table} (queue, id, seq, name, state, added_at_ms) \
         VALUES ($1, 'raw-insert', 1000000, '', 'waiting', 0)"
    ))
    .bind(name)
    .execute(&mut sql)
    .await
    .unwrap();
    let total = cases.len() + 1;

    let (worker, runs) = counting_worker(
        queue.name().clone(),
        schema.backend(name).await,
        Duration::from_millis(500),
    )
    .await;

    let count = |state: &'static str| {
        let table = table.clone();
        async move {
            let mut sql = admin().await;
            let n: i64 = sqlx::query(&format!(
                "SELECT count(*) FROM {table} WHERE queue = $1 AND state::text = $2"
            ))
            .bind(name)
            .bind(state)
            .fetch_one(&mut sql)
            .await
            .unwrap()
            .get(0);
            usize::try_from(n).unwrap()
        }
    };
    eventually("every odd row finished", WAIT, || async {
        count("completed").await + count("failed").await == total
    })
    .await;
    worker.close().await;
    let all: i64 = sqlx::query(&format!("SELECT count(*) FROM {table} WHERE queue = $1"))
        .bind(name)
        .fetch_one(&mut sql)
        .await
        .unwrap()
        .get(0);
    assert_eq!(usize::try_from(all).unwrap(), total, "no row lost or added");

    let runs = runs.lock().unwrap().clone();
    for (c, id) in cases.iter().zip(&ids) {
        let row = sqlx::query(&format!(
            "SELECT state::text, failed_reason FROM {table} WHERE queue = $1 AND id = $2"
        ))
        .bind(name)
        .bind(id.as_str())
        .fetch_one(&mut sql)
        .await
        .unwrap();
        let state: String = row.get(0);
        let reason: Option<String> = row.get(1);
        let ran = runs.get(id.as_bytes()).copied().unwrap_or(0);
        let reached = state == c.end.state();
        let case = format!("{} ({state})", c.id);
        c.end.assert_reached(&case, reached, ran, reason.as_deref());
    }
    assert_eq!(runs.get(b"raw-insert".as_slice()), Some(&1));

    // The listings give every readable job and name the others.
    let bad = ["opts-not-object", "opts-json-null"];
    assert_listed(&queue, total, &bad, "`opts`").await;
}
