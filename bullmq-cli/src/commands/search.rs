//! `jobs QUEUE --search NEEDLE`: the jobs the search rule of [`bullmq::search::Needle`]
//! matches (a JSON object or array contained in the data; else the id, or a part of the name
//! or of a value in the data, ignoring case). On PostgreSQL one query (upstream's schema has
//! no index on `data`: it reads every job of the queue, or of the state); on Redis the
//! library's bounded scan, which says how far it got and resumes from `--cursor`.

use bullmq::postgres::sqlx::{self, Connection as _, PgConnection};
use bullmq::postgres::{DEFAULT_SCHEMA, JobSearch};
use bullmq::search::{Match, Needle, ScanCursor, ScanRequest};
use bullmq::{AnyBackend, JobId, JobState, Queue};
use serde_json::{Value, json};

use crate::cli::{Format, JobsArgs, Sort};
use crate::context::Ctx;
use crate::fail::{Failure, cause};
use crate::job_rows::{job_json, table};
use crate::output;

/// What a search found, and how far it looked.
struct Found {
    jobs: Vec<Value>,
    scanned: u64,
    total: u64,
    next_cursor: Option<String>,
}

/// One search: the command line, the queue and what to find; each backend's way runs on it.
struct Search<'a> {
    ctx: &'a Ctx,
    args: &'a JobsArgs,
    queue: Queue<AnyBackend>,
    needle: Needle,
}

pub(super) async fn run(ctx: &Ctx, args: &JobsArgs, search: &str) -> Result<(), Failure> {
    let needle = Needle::parse(search).ok_or_else(|| {
        Failure::usage(
            "--search is empty; pass a JSON object or array to find in the data, or a text to \
             find in the id, the name or a value of the data",
        )
    })?;
    let search = Search {
        ctx,
        args,
        queue: ctx.store.queue(&args.queue).await?,
        needle,
    };
    let found = match search.queue.backend() {
        AnyBackend::Postgres(_) => search.postgres().await?,
        _ => search.scan().await?,
    };
    if ctx.format == Format::Json {
        return output::print(
            &serde_json::to_string_pretty(&json!({
                "jobs": found.jobs,
                "scanned": found.scanned,
                "total": found.total,
                "next_cursor": found.next_cursor,
            }))
            .unwrap_or_default(),
        );
    }
    output::list(ctx.format, &found.jobs, || table(&found.jobs, ctx.full))?;
    eprintln!(
        "{} found; scanned {} of {} jobs{}",
        found.jobs.len(),
        found.scanned,
        found.total,
        found
            .next_cursor
            .as_ref()
            .map_or_else(String::new, |c| format!("; more with --cursor {c}"))
    );
    Ok(())
}

/// The states searched: the one asked for, or all.
fn states(args: &JobsArgs) -> Vec<JobState> {
    args.state
        .map_or_else(|| JobState::ALL.to_vec(), |s| vec![s])
}

impl Search<'_> {
    /// The library's bounded scan; the cursor is `<state>:<offset>`.
    async fn scan(&self) -> Result<Found, Failure> {
        let (ctx, args) = (self.ctx, self.args);
        let states = states(args);
        let from = args
            .cursor
            .as_deref()
            .map(|c| ScanCursor::parse(c, &states))
            .transpose()
            .map_err(|e| Failure::usage(format!("--cursor: {e}")))?;
        let request = ScanRequest {
            states: &states,
            name: args.name.as_deref(),
            asc: args.sort == Sort::Asc,
            limit: usize::try_from(args.per_page).unwrap_or(usize::MAX),
            scan_limit: args.scan_limit,
            from,
        };
        let found = bullmq::search::scan(&self.queue, &self.needle, &request)
            .await
            .map_err(|e| ctx.store.error("search the jobs of", &args.queue, &e))?;
        Ok(Found {
            jobs: found.matches.iter().map(|m| shown(m, ctx.full)).collect(),
            scanned: found.scanned,
            total: found.total,
            next_cursor: found.next.map(|c| c.to_string()),
        })
    }

    /// One query on the job table; the cursor is the last job's `seq`.
    async fn postgres(&self) -> Result<Found, Failure> {
        let (ctx, args) = (self.ctx, self.args);
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
        let matching = JobSearch::of(&self.needle, 6);
        let (after_op, order) = if args.sort == Sort::Asc {
            (">", "ASC")
        } else {
            ("<", "DESC")
        };
        let state_filter = format!("($2::text IS NULL OR {shown_state} = $2)");
        let sql = format!(
            "SELECT id, {shown_state}, seq FROM {table}
          WHERE queue = $1 AND {state_filter} AND ($3::text IS NULL OR name = $3)
            AND ($4::bigint IS NULL OR seq {after_op} $4) AND {}
          ORDER BY seq {order} LIMIT $5",
            matching.condition
        );
        let state = args.state.map(|s| s.as_str().to_owned());
        let mut con = PgConnection::connect(ctx.store.url()).await.map_err(fail)?;
        let mut query = sqlx::query_as(&sql)
            .bind(&args.queue)
            .bind(&state)
            .bind(&args.name)
            .bind(after)
            .bind(i64::try_from(args.per_page).unwrap_or(i64::MAX));
        for value in &matching.binds {
            query = query.bind(value);
        }
        let rows: Vec<(String, String, i64)> = query.fetch_all(&mut con).await.map_err(fail)?;
        let total: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {table} WHERE queue = $1 AND {state_filter}"
        ))
        .bind(&args.queue)
        .bind(&state)
        .fetch_one(&mut con)
        .await
        .map_err(fail)?;
        let _ = con.close().await;
        let mut jobs = Vec::with_capacity(rows.len());
        for (id, state, _) in &rows {
            let job = self
                .queue
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
}

/// A match as `jobs` shows it; one whose fields cannot be read (it matched by id) as its id
/// and state.
fn shown(found: &Match, full: bool) -> Value {
    match &found.job {
        Some(job) => job_json(job, Some(found.state), full),
        None => json!({"id": found.id.as_str(), "state": found.state.as_str(), "unreadable": true}),
    }
}
