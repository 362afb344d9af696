//! Golden test: the next 20 run times of our cron engine against Node.js's cron-parser (the
//! version bullmq 6.7.6 pins), computed live by `tests/node/cron-golden.mjs`, for every
//! pattern, zone, start instant, start/end date and refused pattern listed there.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use bullmq_cron::{CronExpression, CronOptions};
use serde_json::Value;

const COUNT: usize = 20;

/// Runs the Node script and returns its JSON lines (`CRON_GOLDEN_JSONL` names a file saved
/// from an earlier run instead, to iterate on the engine without the ~2 minutes Node takes).
fn golden_cases() -> Vec<Value> {
    if let Some(path) = std::env::var("CRON_GOLDEN_JSONL")
        .ok()
        .filter(|p| !p.is_empty())
    {
        let text = std::fs::read_to_string(path).unwrap();
        return text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/node");
    let output = Command::new("node")
        .arg("cron-golden.mjs")
        .current_dir(&dir)
        .output()
        .expect("node must be installed (and `npm ci --prefix tests/node` done)");
    assert!(
        output.status.success(),
        "cron-golden.mjs failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn millis(v: &Value) -> Option<u64> {
    v.as_f64().and_then(|f| format!("{f:.0}").parse().ok())
}

fn options(case: &Value, current: Option<u64>) -> CronOptions {
    CronOptions {
        tz: case["tz"].as_str().map(str::to_owned),
        current_date: current,
        start_date: millis(&case["startDate"]),
        end_date: millis(&case["endDate"]),
        hash_seed: case["hashSeed"].as_str().map(str::to_owned),
    }
}

/// What we compute, in the shape the script prints: run times, or the error.
#[derive(Debug, PartialEq)]
enum Outcome {
    Times(Vec<u64>),
    Refused,
}

fn expected(v: &Value) -> Outcome {
    match v {
        Value::Array(items) => Outcome::Times(items.iter().map(|t| millis(t).unwrap()).collect()),
        _ => Outcome::Refused,
    }
}

fn iterated(case: &Value) -> Outcome {
    let pattern = case["pattern"].as_str().unwrap();
    match CronExpression::parse(pattern, &options(case, millis(&case["currentDate"]))) {
        Ok(mut cron) => Outcome::Times(cron.take(COUNT)),
        Err(_) => Outcome::Refused,
    }
}

fn chained(case: &Value) -> Outcome {
    let pattern = case["pattern"].as_str().unwrap();
    let mut current = millis(&case["currentDate"]);
    let mut times = Vec::new();
    for _ in 0..COUNT {
        let Ok(mut cron) = CronExpression::parse(pattern, &options(case, current)) else {
            return Outcome::Refused;
        };
        let Ok(next) = cron.next_run() else { break };
        times.push(next);
        current = Some(next);
    }
    Outcome::Times(times)
}

#[test]
fn next_run_times_match_cron_parser() {
    let cases = golden_cases();
    assert!(cases.len() >= 1000, "only {} golden cases", cases.len());
    let mut failures = Vec::new();
    let mut compared = 0_usize;
    for case in &cases {
        // One way of reading the runs (`iter` or `chain`) against what cron-parser read.
        let mut check = |how: &str, want: Outcome, got: Outcome| {
            if let Outcome::Times(t) = &want {
                compared += t.len();
            }
            if got != want {
                failures.push(format!("{case}\n  {how}: rust {got:?}"));
            }
        };
        check("iter", expected(&case["iter"]), iterated(case));
        if !case["chain"].is_null() {
            check("chain", expected(&case["chain"]), chained(case));
        }
    }
    let patterns: std::collections::BTreeSet<&str> =
        cases.iter().filter_map(|c| c["pattern"].as_str()).collect();
    println!(
        "{} cases, {} patterns, {compared} run times compared",
        cases.len(),
        patterns.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from cron-parser; first ones:\n{}",
        failures.len(),
        cases.len(),
        failures
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
