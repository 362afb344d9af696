//! `doctor`: checks the store a fleet runs on and says what is wrong, each problem with its
//! fix: the server (version, eviction policy, memory, persistence), the version the queues'
//! `meta` records against this client's scripts, the PostgreSQL schema version and
//! `min_client_version`, Cluster hash tags, the current user's permissions, clock skew.
//!
//! It reads the server directly (redis-rs or sqlx, the clients the library is built on):
//! these are facts about the server, not about queues, and the library's connect would refuse
//! the very settings the checks are there to explain.

mod finding;
mod postgres;
mod redis;

use serde_json::{Value, json};

use self::finding::{Finding, Status};
use crate::context::Ctx;
use crate::fail::{Failure, count_of};
use crate::output;

pub(super) async fn run(ctx: &Ctx) -> Result<(), Failure> {
    let url = ctx.store.url();
    let scheme = url
        .split_once("://")
        .map_or("", |(s, _)| s)
        .to_ascii_lowercase();
    let (store, findings) = if scheme.starts_with("postgres") {
        ("postgres", postgres::checks(ctx).await?)
    } else {
        ("redis", redis::checks(ctx, &scheme).await?)
    };
    let problems = findings
        .iter()
        .filter(|f| f.status == Status::Problem)
        .count();
    let item = json!({
        "store": store,
        "target": ctx.store.target(),
        "problems": problems,
        "checks": findings.iter().map(Finding::json).collect::<Vec<Value>>(),
    });
    output::one(ctx.format, &item, || text(&findings, problems))?;
    if problems > 0 {
        return Err(Failure::failed(format!(
            "doctor found {} on {}; each says its fix above",
            count_of(
                u64::try_from(problems).unwrap_or(u64::MAX),
                "problem",
                "problems"
            ),
            ctx.store.target()
        )));
    }
    Ok(())
}

fn text(findings: &[Finding], problems: usize) -> String {
    let mut table = output::table(&["CHECK", "STATUS", "FOUND", "FIX"]);
    for f in findings {
        table.add_row(vec![
            f.check.to_owned(),
            f.status_text().to_owned(),
            f.found.clone(),
            f.fix.clone().unwrap_or_default(),
        ]);
    }
    let verdict = if problems == 0 {
        "nothing is wrong".to_owned()
    } else {
        format!("{problems} problem(s)")
    };
    format!("{table}\n{verdict}")
}
