//! Client instructions per processed job, counted by valgrind's callgrind, for ours and the
//! official port side by side (`redis_worker -- --instructions`).
//!
//! An instruction count does not depend on how busy the machine is, unlike a CPU clock. Each
//! harness binary is run as a child twice per mode and job count: once plainly to fill a queue
//! under a fresh prefix (`BENCH_COUNT_STEP=fill`), then under callgrind to work through it
//! (`BENCH_COUNT_STEP=work`): its worker runs until its processor has been called for every
//! job, then closes (which waits for the jobs in progress). With `N` jobs and `N / 5`, the
//! difference of the two counts divided by the difference of the jobs is the cost of one job:
//! start-up, connecting, loading the scripts and closing cancel out.
//!
//! Env: `BENCH_JOBS` (2,000; the small run has a fifth), `BENCH_ROUNDS` (1),
//! `BENCH_OFFICIAL_WORKER` (`benches/official/target/release/worker`, built by
//! `benches/compare-worker.sh --instructions`; absent: ours alone), `BENCH_CALLGRIND_DIR`
//! (where to keep the callgrind files of the big runs, for `callgrind_annotate`; unset: none
//! kept). Modes: `--mode` as for the throughput runs, default `instant-c{1,10,100}-keep`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::cli::{env_u64, redis_url};
use super::measure::{admin, delete_prefix, unique_prefix};
use super::worker::Mode;

/// The environment variable naming the step a child runs.
pub const STEP: &str = "BENCH_COUNT_STEP";
/// The environment variable naming the prefix of the child's queue.
pub const PREFIX: &str = "BENCH_COUNT_PREFIX";

/// What a child started by the counting parent does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    /// Fills the queue (not counted).
    Fill,
    /// Works through the filled queue (counted).
    Work,
}

/// The step and prefix this process was started for, if a counting parent started it.
pub fn child() -> Option<(Step, String)> {
    let step = match std::env::var(STEP).ok()?.as_str() {
        "fill" => Step::Fill,
        "work" => Step::Work,
        other => panic!("{STEP}={other}: fill or work"),
    };
    let prefix = std::env::var(PREFIX).unwrap_or_else(|_| panic!("{PREFIX} with {STEP}"));
    Some((step, prefix))
}

/// Counts the processor's calls and wakes the waiter when every job has been handed out.
pub struct Finish {
    calls: AtomicU64,
    jobs: u64,
    done: tokio::sync::Notify,
}

impl Finish {
    /// For a run of `jobs` jobs.
    pub fn new(jobs: u64) -> Arc<Self> {
        Arc::new(Self {
            calls: AtomicU64::new(0),
            jobs,
            done: tokio::sync::Notify::new(),
        })
    }

    /// Called by the processor, once per job.
    pub fn processed(&self) {
        if self.calls.fetch_add(1, Ordering::Relaxed) + 1 == self.jobs {
            self.done.notify_one();
        }
    }

    /// Returns once the processor has been called for every job.
    pub async fn wait(&self) {
        self.done.notified().await;
    }
}

/// One implementation's harness binary.
pub struct Harness {
    /// Its name in the lines (`bullmq-rs`, `bullmq-official`).
    pub name: &'static str,
    /// Its executable.
    pub exe: PathBuf,
}

/// The harnesses to count: this executable (ours) and, when built, the official port's.
pub fn harnesses() -> Vec<Harness> {
    let mut all = vec![Harness {
        name: "bullmq-rs",
        exe: std::env::current_exe().expect("this bench's path"),
    }];
    let official = std::env::var("BENCH_OFFICIAL_WORKER")
        .unwrap_or_else(|_| "benches/official/target/release/worker".to_owned());
    let official = PathBuf::from(official);
    if official.exists() {
        all.push(Harness {
            name: "bullmq-official",
            exe: official,
        });
    } else {
        eprintln!(
            "{} is not built: counting ours alone (benches/compare-worker.sh --instructions builds it)",
            official.display()
        );
    }
    all
}

/// Counts every harness on every mode and prints one JSON line per count, then a table.
pub fn count_all(modes: &[Mode]) {
    let jobs = env_u64("BENCH_JOBS", 2_000);
    let small = (jobs / 5).max(1);
    let rounds = env_u64("BENCH_ROUNDS", 1);
    let harnesses = harnesses();
    let mut rows: Vec<(String, &'static str, f64)> = Vec::new();
    for round in 0..rounds {
        for &mode in modes {
            for h in &harnesses {
                let big = counted(h, mode, jobs, true);
                let less = counted(h, mode, small, false);
                #[allow(clippy::cast_precision_loss)] // counts far below 2^52
                let per_job = (big as f64 - less as f64) / (jobs - small) as f64;
                println!(
                    r#"{{"impl":"{}","mode":"{}","round":{round},"jobs":[{small},{jobs}],"instructions":[{less},{big}],"instructions_per_job":{per_job:.0}}}"#,
                    h.name,
                    mode.name()
                );
                rows.push((mode.name(), h.name, per_job));
            }
        }
    }
    println!(
        "\n| mode | bullmq-rs instructions/job | bullmq-official | ratio |\n|---|---|---|---|"
    );
    for &mode in modes {
        let median = |name: &str| {
            let mut v: Vec<f64> = rows
                .iter()
                .filter(|r| r.0 == mode.name() && r.1 == name)
                .map(|r| r.2)
                .collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        let ours = median("bullmq-rs").unwrap_or(f64::NAN);
        match median("bullmq-official") {
            Some(theirs) => println!(
                "| {} | {ours:.0} | {theirs:.0} | {:.2}x |",
                mode.name(),
                ours / theirs
            ),
            None => println!("| {} | {ours:.0} | - | - |", mode.name()),
        }
    }
}

/// The instructions `h` executes under callgrind working through `jobs` jobs of `mode`
/// (the callgrind file kept in `BENCH_CALLGRIND_DIR` when `keep`).
fn counted(h: &Harness, mode: Mode, jobs: u64, keep: bool) -> u64 {
    let url = redis_url();
    let prefix = unique_prefix("bench-ir", &mode.name());
    let harness = |mut c: Command, step: &str| {
        c.args(["--mode", &mode.name()])
            .env(STEP, step)
            .env(PREFIX, &prefix)
            .env("BENCH_JOBS", jobs.to_string());
        c
    };
    let fill = harness(Command::new(&h.exe), "fill")
        .output()
        .expect("run the harness");
    assert!(
        fill.status.success(),
        "{} fill failed: {}",
        h.name,
        String::from_utf8_lossy(&fill.stderr)
    );
    let out_file = match std::env::var("BENCH_CALLGRIND_DIR") {
        Ok(dir) if keep => format!("{dir}/callgrind.{}.{}.out", h.name, mode.name()),
        _ => "/dev/null".to_owned(),
    };
    let mut valgrind = Command::new("valgrind");
    valgrind
        .args([
            "--tool=callgrind",
            &format!("--callgrind-out-file={out_file}"),
        ])
        .arg(&h.exe)
        .env("BENCH_VALGRIND", "1");
    let mut work = harness(valgrind, "work");
    let out = work.output().expect("valgrind (apt-get install valgrind)");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut admin = admin(&url).await;
        delete_prefix(&mut admin, &prefix).await;
    });
    collected(&out, h.name)
}

/// The instructions callgrind counted in the finished run `out` (of `what`), from its
/// `==pid== Collected : <instructions>` line; a failed run stops the benchmark.
pub fn collected(out: &std::process::Output, what: &str) -> u64 {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} under valgrind failed: {stderr}"
    );
    stderr
        .lines()
        .find_map(|l| {
            l.split_once("Collected :")
                .map(|(_, n)| n.trim().to_owned())
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no instruction count from callgrind: {stderr}"))
}
