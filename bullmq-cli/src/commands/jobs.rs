//! `jobs QUEUE`: a page of jobs by state (each state paged), filtered by name; with
//! `--search`, the search of `search.rs` instead.

use bullmq::JobState;
use bullmq::backend::Range;
use bullmq::job::JobType;

use crate::cli::{JobsArgs, Sort};
use crate::context::Ctx;
use crate::fail::Failure;
use crate::job_rows::{job_json, table};
use crate::output;

pub(super) async fn run(ctx: &Ctx, args: &JobsArgs) -> Result<(), Failure> {
    if let Some(search) = &args.search {
        return super::search::run(ctx, args, search).await;
    }
    let queue = ctx.store.queue(&args.queue).await?;
    let states: Vec<JobState> = match args.state {
        Some(s) => vec![s],
        None => JobState::ALL.to_vec(),
    };
    let per_page = i64::try_from(args.per_page).unwrap_or(i64::MAX);
    let start = i64::try_from(args.page - 1)
        .unwrap_or(i64::MAX)
        .saturating_mul(per_page);
    let range = Range {
        start,
        end: start.saturating_add(per_page - 1),
        asc: args.sort == Sort::Asc,
    };
    let mut items = Vec::new();
    for state in states {
        let jobs = queue
            .get_jobs(&[JobType::State(state)], range)
            .await
            .map_err(|e| ctx.store.error("read the jobs of", &args.queue, &e))?;
        for job in jobs {
            if args.name.as_ref().is_none_or(|n| *n == job.name) {
                items.push(job_json(&job, Some(state), ctx.full));
            }
        }
    }
    output::list(ctx.format, &items, || table(&items, ctx.full))
}
