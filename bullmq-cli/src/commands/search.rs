//! `jobs QUEUE --search NEEDLE`: jobs whose data contains a JSON value (containment, as
//! PostgreSQL's `jsonb @>`) or a text. On PostgreSQL one query (upstream's schema has no index
//! on `data`: it reads every job of the queue, or of the state); on Redis a bounded scan that
//! says how far it got and resumes from `--cursor`.

use bullmq::backend::Range;
use bullmq::job::JobType;
use bullmq::postgres::DEFAULT_SCHEMA;
use bullmq::postgres::sqlx::{self, Connection as _, PgConnection};
use bullmq::{AnyBackend, JobId, JobState, Queue};
use serde_json::{Value, json};

use super::Ctx;
use super::jobs::job_json;
use crate::cli::JobsArgs;
use crate::fail::{Failure, cause};
use crate::output;

/// Jobs read per call of a Redis scan.
const SCAN_PAGE: u64 = 500;

/// What to look for in the data.
#[derive(Debug)]
enum Needle {
    /// Contained, as `jsonb @>`: every key of an object, every element of an array.
    Json(Value),
    /// A piece of the data's JSON text.
    Text(String),
}

impl Needle {
    fn of(text: &str) -> Self {
        match serde_json::from_str::<Value>(text) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => Self::Json(v),
            _ => Self::Text(text.to_owned()),
        }
    }

    fn matches(&self, data: &str) -> bool {
        match self {
            Self::Text(t) => data.contains(t.as_str()),
            Self::Json(needle) => {
                serde_json::from_str::<Value>(data).is_ok_and(|hay| contains(&hay, needle))
            }
        }
    }
}

/// `hay @> needle`, as PostgreSQL defines containment for jsonb.
fn contains(hay: &Value, needle: &Value) -> bool {
    match (hay, needle) {
        (Value::Object(h), Value::Object(n)) => n
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| contains(hv, v))),
        (Value::Array(h), Value::Array(n)) => {
            n.iter().all(|nv| h.iter().any(|hv| contains(hv, nv)))
        }
        // A top-level array contains a scalar it holds.
        (Value::Array(h), n) if !n.is_object() && !n.is_array() => h.contains(n),
        (h, n) => h == n,
    }
}

/// What a search found, and how far it looked.
struct Found {
    jobs: Vec<Value>,
    scanned: u64,
    total: u64,
    next_cursor: Option<String>,
}

pub(super) async fn run(ctx: &Ctx, args: &JobsArgs, search: &str) -> Result<(), Failure> {
    let needle = Needle::of(search);
    let queue = ctx.store.queue(&args.queue).await?;
    let found = match queue.backend() {
        AnyBackend::Postgres(_) => postgres(ctx, args, &queue, &needle).await?,
        _ => redis(ctx, args, &queue, &needle).await?,
    };
    let summary = format!(
        "{} found; scanned {} of {} jobs{}",
        found.jobs.len(),
        found.scanned,
        found.total,
        found
            .next_cursor
            .as_ref()
            .map_or_else(String::new, |c| format!("; more with --cursor {c}"))
    );
    match ctx.format {
        crate::cli::Format::Json => output::print(
            &serde_json::to_string_pretty(&json!({
                "jobs": found.jobs,
                "scanned": found.scanned,
                "total": found.total,
                "next_cursor": found.next_cursor,
            }))
            .unwrap_or_default(),
        ),
        format => {
            output::list(format, &found.jobs, || {
                super::jobs::text(&found.jobs, ctx.full)
            })?;
            eprintln!("{summary}");
            Ok(())
        }
    }
}

/// The states searched: the one asked for, or all.
fn states(args: &JobsArgs) -> Vec<JobState> {
    args.state
        .map_or_else(|| JobState::ALL.to_vec(), |s| vec![s.state()])
}

/// A bounded scan: state by state, a page at a time, until `per_page` matches or
/// `scan_limit` jobs looked at; the cursor is `<state>:<offset>`.
async fn redis(
    ctx: &Ctx,
    args: &JobsArgs,
    queue: &Queue<AnyBackend>,
    needle: &Needle,
) -> Result<Found, Failure> {
    let fail = |e: bullmq::Error| ctx.store.error("search the jobs of", &args.queue, &e);
    let states = states(args);
    let (mut state_at, mut offset) = match &args.cursor {
        Some(c) => parse_cursor(c, &states)?,
        None => (0, 0),
    };
    let types: Vec<JobType> = states.iter().map(|s| JobType::State(*s)).collect();
    let total = queue.get_job_count_by_types(&types).await.map_err(fail)?;
    let mut found = Found {
        jobs: Vec::new(),
        scanned: 0,
        total,
        next_cursor: None,
    };
    while state_at < states.len() {
        let state = states[state_at];
        if found.scanned >= args.scan_limit || found.jobs.len() as u64 >= args.per_page {
            found.next_cursor = Some(format!("{}:{offset}", state.as_str()));
            return Ok(found);
        }
        let page = SCAN_PAGE.min(args.scan_limit - found.scanned);
        let start = i64::try_from(offset).unwrap_or(i64::MAX);
        let range = Range {
            start,
            end: start.saturating_add(i64::try_from(page).unwrap_or(i64::MAX) - 1),
            asc: args.sort == crate::cli::Sort::Asc,
        };
        let jobs = queue
            .get_jobs(&[JobType::State(state)], range)
            .await
            .map_err(fail)?;
        let read = jobs.len() as u64;
        for job in jobs {
            found.scanned += 1;
            offset += 1;
            if needle.matches(&job.data) && args.name.as_ref().is_none_or(|n| *n == job.name) {
                found.jobs.push(job_json(&job, Some(state), ctx.full));
                if found.jobs.len() as u64 >= args.per_page {
                    // Resume after this job (the rest of the page is read again).
                    found.next_cursor = Some(format!("{}:{offset}", state.as_str()));
                    return Ok(found);
                }
            }
        }
        if read < page {
            state_at += 1;
            offset = 0;
        }
    }
    Ok(found)
}

/// `<state>:<offset>` as the index of the state among `states` and the offset.
fn parse_cursor(cursor: &str, states: &[JobState]) -> Result<(usize, u64), Failure> {
    let bad = || {
        Failure::usage(format!(
            "--cursor {cursor:?} is not one this search printed; pass the value of its \
             `next_cursor` (e.g. waiting:500) with the same --state"
        ))
    };
    let (state, offset) = cursor.rsplit_once(':').ok_or_else(bad)?;
    let at = states
        .iter()
        .position(|s| s.as_str() == state)
        .ok_or_else(bad)?;
    Ok((at, offset.parse().map_err(|_| bad())?))
}

/// One query on the job table; the cursor is the last job's `seq`.
async fn postgres(
    ctx: &Ctx,
    args: &JobsArgs,
    queue: &Queue<AnyBackend>,
    needle: &Needle,
) -> Result<Found, Failure> {
    let schema = ctx.store.schema().unwrap_or(DEFAULT_SCHEMA);
    let table = format!("\"{}\".job", schema.replace('"', "\"\""));
    let fail = |e: sqlx::Error| {
        Failure::failed(format!(
            "cannot search the jobs of queue {:?} on {}: {}; check --schema and the role's grants",
            args.queue,
            ctx.store.target(),
            cause(&e)
        ))
    };
    let after: Option<i64> = match &args.cursor {
        Some(c) => Some(c.parse().map_err(|_| {
            Failure::usage(format!(
                "--cursor {c:?} is not one this search printed; pass its `next_cursor` value"
            ))
        })?),
        None => None,
    };
    // The state as the library names it: `prioritized` is `waiting` with a priority.
    let shown_state = "CASE WHEN state = 'waiting' AND priority > 0 THEN 'prioritized' \
                       ELSE state::text END";
    let (condition, value) = match needle {
        Needle::Json(v) => ("data @> $2::jsonb", v.to_string()),
        Needle::Text(t) => ("strpos(data::text, $2) > 0", t.clone()),
    };
    let (after_op, order) = if args.sort == crate::cli::Sort::Asc {
        (">", "ASC")
    } else {
        ("<", "DESC")
    };
    let state_filter = "($3::text IS NULL OR {shown} = $3)".replace("{shown}", shown_state);
    let sql = format!(
        "SELECT id, {shown_state}, seq FROM {table}
          WHERE queue = $1 AND {condition} AND {state_filter}
            AND ($4::text IS NULL OR name = $4) AND ($5::bigint IS NULL OR seq {after_op} $5)
          ORDER BY seq {order} LIMIT $6"
    );
    let state = args.state.map(|s| s.state().as_str().to_owned());
    let mut con = PgConnection::connect(ctx.store.url()).await.map_err(fail)?;
    let rows: Vec<(String, String, i64)> = sqlx::query_as(&sql)
        .bind(&args.queue)
        .bind(&value)
        .bind(&state)
        .bind(&args.name)
        .bind(after)
        .bind(i64::try_from(args.per_page).unwrap_or(i64::MAX))
        .fetch_all(&mut con)
        .await
        .map_err(fail)?;
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT count(*) FROM {table} WHERE queue = $1 AND {}",
        state_filter.replace("$3", "$2")
    ))
    .bind(&args.queue)
    .bind(&state)
    .fetch_one(&mut con)
    .await
    .map_err(fail)?;
    let _ = con.close().await;
    let mut jobs = Vec::with_capacity(rows.len());
    for (id, state, _) in &rows {
        let job = queue
            .get_job(&JobId::from(id.as_str()))
            .await
            .map_err(|e| ctx.store.error("read the jobs of", &args.queue, &e))?;
        if let Some(job) = job {
            let state = JobState::ALL.iter().copied().find(|s| s.as_str() == state);
            jobs.push(job_json(&job, state, ctx.full));
        }
    }
    let total = u64::try_from(total).unwrap_or(0);
    let next_cursor = (rows.len() as u64 >= args.per_page)
        .then(|| rows.last().map(|(_, _, seq)| seq.to_string()))
        .flatten();
    Ok(Found {
        jobs,
        // No index on `data`: the query reads every job of the queue (or state).
        scanned: total,
        total,
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_is_jsonbs() {
        let hay = json!({"user": {"name": "ann", "tags": ["a", "b"]}, "n": 1});
        assert!(contains(&hay, &json!({"user": {"name": "ann"}})));
        assert!(contains(&hay, &json!({"user": {"tags": ["b"]}})));
        assert!(!contains(&hay, &json!({"user": {"tags": ["c"]}})));
        assert!(!contains(&hay, &json!({"n": 2})));
        assert!(contains(&json!([1, 2]), &json!([2])));
        assert!(Needle::of("ann").matches(r#"{"u":"ann"}"#));
        assert!(matches!(Needle::of("12"), Needle::Text(_)));
    }
}
