//! The chaos soaks' driver, one for every store: a producer that keeps adding batches of jobs
//! with ids of their own (a refused batch is sent again, which the ids make idempotent), and a
//! loop that strikes faults at random until the soak's time is up, then keeps quiet. Each soak
//! brings only its faults (a list of kinds and how to strike one) and its checks.
//!
//! ```ignore
//! let plan = ChaosPlan { soak, seed, pause: (600, 800), quiet: RERUN_WINDOW };
//! let kinds = [(Fault::KillWorker, "worker kills"), (Fault::RestartServer, "restarts")];
//! let struck = plan.run(&kinds, async |fault, rng| {
//!     strike(fault, rng).await
//! }).await;
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bullmq_core::backend::{AddJobs, Lifecycle, QueueMeta};
use bullmq_core::{BulkJob, JobOptions, Queue};

use crate::soak::next_random;

/// How a soak's producer adds its jobs.
#[derive(Debug, Clone)]
pub struct Producer {
    /// The ids' prefix: the jobs are `{ids}0`, `{ids}1`, …
    pub ids: &'static str,
    /// Every job's data.
    pub data: serde_json::Value,
    /// The wait between two rounds of batches.
    pub pace: Duration,
    /// The wait before a refused batch is sent again (the server down, a connection cut).
    pub retry: Duration,
}

/// What the producer added: the ids of every batch whose add returned, per queue, and how many
/// tries were refused.
#[derive(Debug, Default)]
pub struct Produced {
    /// The ids added to each queue, in the queues' order.
    pub ids: Vec<Vec<String>>,
    /// How many tries were refused and sent again.
    pub refused: u32,
}

impl Producer {
    /// Adds a batch of ten jobs to each of `queues` in turn, every `pace`, until `stop` is
    /// set. `gate` is held for each try, so a fault that holds it knows every add
    /// acknowledged so far.
    pub async fn run<B>(
        self,
        queues: Vec<Queue<B>>,
        gate: Arc<tokio::sync::Mutex<()>>,
        stop: Arc<AtomicBool>,
    ) -> Produced
    where
        B: AddJobs + QueueMeta + Lifecycle,
    {
        let mut produced = Produced {
            ids: vec![Vec::new(); queues.len()],
            refused: 0,
        };
        let mut next = 0;
        while !stop.load(Ordering::SeqCst) {
            for (queue, added) in queues.iter().zip(&mut produced.ids) {
                let batch: Vec<String> = (next..next + 10)
                    .map(|n| format!("{}{n}", self.ids))
                    .collect();
                next += 10;
                let jobs = || {
                    batch
                        .iter()
                        .map(|id| BulkJob {
                            name: "soak".to_owned(),
                            data: self.data.clone(),
                            opts: JobOptions::new().job_id(id.clone()),
                        })
                        .collect::<Vec<_>>()
                };
                loop {
                    let taken = {
                        let _held = gate.lock().await;
                        queue.add_bulk(jobs()).await.is_ok()
                    };
                    if taken {
                        break;
                    }
                    produced.refused += 1;
                    // Retry interval while the server is down or being replaced.
                    tokio::time::sleep(self.retry).await;
                }
                added.extend(batch);
            }
            // Fixed wait: spaces the jobs over time, as a real run would meet the faults.
            tokio::time::sleep(self.pace).await;
        }
        produced
    }

    /// [`Producer::run`] on one queue, with a gate no fault holds; the ids it added.
    pub async fn run_one<B>(self, queue: Queue<B>, stop: Arc<AtomicBool>) -> Vec<String>
    where
        B: AddJobs + QueueMeta + Lifecycle,
    {
        let gate = Arc::new(tokio::sync::Mutex::new(()));
        let mut produced = self.run(vec![queue], gate, stop).await;
        produced.ids.pop().unwrap_or_default()
    }
}

/// One fault struck: when it began, when the store was healthy again, and which kind.
#[derive(Debug, Clone, Copy)]
pub struct Struck<F> {
    /// When it was struck.
    pub at: Instant,
    /// When the store was healthy again (the strike returned).
    pub over: Instant,
    /// Which kind of fault.
    pub fault: F,
}

/// How long a soak strikes faults, how it draws them, and how long it keeps quiet after.
#[derive(Debug, Clone, Copy)]
pub struct ChaosPlan {
    /// How long faults are struck (see [`crate::soak::soak_settings`]).
    pub soak: Duration,
    /// The random sequence's seed.
    pub seed: u64,
    /// The wait before each fault, in ms: the first plus a random part below the second.
    pub pause: (u64, u64),
    /// The quiet stretch after the last fault, plus two seconds: longer than a stranded job
    /// takes to run again.
    pub quiet: Duration,
}

impl ChaosPlan {
    /// Faults for `soak`, one every 0.6 to 1.4 s, from `seed`, then quiet for `quiet` (plus two
    /// seconds).
    pub fn new(soak: Duration, seed: u64, quiet: Duration) -> Self {
        Self {
            soak,
            seed,
            pause: (600, 800),
            quiet,
        }
    }

    /// Strikes a fault drawn at random from `kinds` (each with the name [`tally`] counts it
    /// under) with `strike`, which may draw more from the sequence it is given, after each
    /// pause until the soak is over, then keeps quiet; answers every fault struck.
    pub async fn run<F: Copy>(
        self,
        kinds: &[(F, &str)],
        mut strike: impl AsyncFnMut(F, &mut u64),
    ) -> Vec<Struck<F>> {
        let mut rng = self.seed;
        let mut struck = Vec::new();
        let started = Instant::now();
        let kinds_len = u64::try_from(kinds.len()).unwrap();
        while started.elapsed() < self.soak {
            let pause = self.pause.0 + next_random(&mut rng) % self.pause.1;
            // Fixed wait: spaces the faults over time, as a real run would meet them.
            tokio::time::sleep(Duration::from_millis(pause)).await;
            let fault = kinds[usize::try_from(next_random(&mut rng) % kinds_len).unwrap()].0;
            let at = Instant::now();
            strike(fault, &mut rng).await;
            struck.push(Struck {
                at,
                over: Instant::now(),
                fault,
            });
        }
        // Fixed wait: the quiet stretch in which no job may run again.
        tokio::time::sleep(self.quiet + Duration::from_secs(2)).await;
        struck
    }
}

/// How many of `struck` were `kind`.
pub fn count<F: PartialEq + Copy>(struck: &[Struck<F>], kind: F) -> usize {
    struck.iter().filter(|s| s.fault == kind).count()
}

/// `N faults (n1 label1, n2 label2, …)`: how many of `struck` were each of `kinds`.
pub fn tally<F: PartialEq + Copy>(struck: &[Struck<F>], kinds: &[(F, &str)]) -> String {
    let each: Vec<String> = kinds
        .iter()
        .map(|&(kind, label)| format!("{} {label}", count(struck, kind)))
        .collect();
    format!("{} faults ({})", struck.len(), each.join(", "))
}

/// When each of `struck` began.
pub fn started<F>(struck: &[Struck<F>]) -> Vec<Instant> {
    struck.iter().map(|s| s.at).collect()
}

/// The bounds every soak ends with: a fault strands at most the jobs in flight on every worker
/// (a fetch-next included), so `reruns` stay within what the faults explain; and the producer
/// kept adding (at least `least` of `added`).
pub fn assert_bounds(
    reruns: usize,
    faults: usize,
    workers: usize,
    concurrency: usize,
    added: usize,
    least: usize,
) {
    assert!(
        reruns <= faults.max(1) * workers * (concurrency + 1),
        "{reruns} re-runs for {faults} faults"
    );
    assert!(added >= least, "the producer kept adding ({added})");
}
