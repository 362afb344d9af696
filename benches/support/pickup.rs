//! The pickup-latency benchmark's modes, pacing, latencies and JSON line, the same for ours
//! (`benches/redis_pickup.rs`) and the official port's (`benches/official/src/bin/pickup.rs`);
//! each harness brings only its worker and its add.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cli::{Args, env_u64, redis_url, runtime};

/// The offered loads, jobs per second.
pub const RATES: [u64; 3] = [100, 1_000, 10_000];
/// The worker's concurrency.
pub const CONCURRENCY: usize = 10;
/// Every job's name.
pub const JOB_NAME: &str = "pickup";
/// How long the worker is left idle before each batch of adds, so that it has found the queue
/// empty and waits on its marker.
const IDLE: Duration = Duration::from_millis(300);

/// A job's data: when its add was sent.
#[derive(Serialize, Deserialize)]
pub struct Sent {
    /// Wall clock, µs since the Unix epoch.
    pub t: u64,
}

impl Sent {
    /// Stamped now.
    pub fn now() -> Self {
        Self { t: now_us() }
    }
}

/// The wall clock, µs since the Unix epoch (the producer's and the processor's clock, the same
/// as Node's `performance.timeOrigin + performance.now()`).
pub fn now_us() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    u64::try_from(since.as_micros()).expect("µs fit in u64")
}

/// One mode: its offered rate, the jobs measured and the unmeasured ones before them.
#[derive(Clone, Copy)]
pub struct Run {
    /// Jobs per second offered.
    pub rate: u64,
    /// Jobs measured: `rate × BENCH_SECS` (3), 100 under `--test`.
    pub jobs: u64,
    /// Jobs of the warm-up: a second's worth, at most 1,000; none under `--test`.
    pub warmup: u64,
}

impl Run {
    /// The mode's name, `rate{rate}-c10`.
    pub fn mode(&self) -> String {
        format!("rate{}-c{CONCURRENCY}", self.rate)
    }

    /// The modes asked for on the command line (all of them when none is), sized from
    /// `BENCH_SECS` and `--test`.
    pub fn from_args() -> Vec<Self> {
        let args = Args::parse();
        let rates: Vec<u64> = if args.modes.is_empty() {
            RATES.to_vec()
        } else {
            args.modes.iter().map(|m| parse_mode(m)).collect()
        };
        let secs = env_u64("BENCH_SECS", 3);
        rates
            .into_iter()
            .map(|rate| {
                let (jobs, warmup) = if args.test {
                    (100, 0)
                } else {
                    (rate * secs, rate.min(1_000))
                };
                Self { rate, jobs, warmup }
            })
            .collect()
    }
}

/// A harness's `main`: runs `measure(REDIS_URL, mode)` for each mode asked for
/// ([`Run::from_args`]), one after the other, on a multi-threaded runtime.
pub fn main<F, Fut>(measure: F)
where
    F: Fn(String, Run) -> Fut,
    Fut: Future<Output = ()>,
{
    let runs = Run::from_args();
    let url = redis_url();
    runtime(false).block_on(async {
        for run in runs {
            measure(url.clone(), run).await;
        }
    });
}

/// `rate{N}-c10`'s N; anything else stops the run.
fn parse_mode(mode: &str) -> u64 {
    mode.strip_prefix("rate")
        .and_then(|r| r.strip_suffix(&format!("-c{CONCURRENCY}")))
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("unknown mode {mode:?}: rate{{100,1000,10000}}-c10"))
}

/// The latencies the processor records, µs, shared between it and the harness.
#[derive(Clone, Default)]
pub struct Latencies(Arc<Mutex<Vec<u64>>>);

impl Latencies {
    /// Records a job started at `started` (µs, read first thing in the processor) whose data
    /// is `sent`.
    pub fn record(&self, started: u64, sent: &Sent) {
        self.0
            .lock()
            .expect("latencies")
            .push(started.saturating_sub(sent.t));
    }

    fn clear(&self) {
        self.0.lock().expect("latencies").clear();
    }

    fn len(&self) -> usize {
        self.0.lock().expect("latencies").len()
    }

    /// Waits until `n` latencies have been recorded.
    async fn wait_for(&self, n: u64) {
        let n = usize::try_from(n).expect("jobs fit in memory");
        while self.len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The latencies recorded, sorted.
    pub fn sorted(&self) -> Vec<u64> {
        let mut v = std::mem::take(&mut *self.0.lock().expect("latencies"));
        v.sort_unstable();
        v
    }
}

/// The measured part of a mode, given a worker idle on the empty queue whose processor records
/// into `latencies`, and `add`, whose future adds one job with data [`Sent::now`] (stamped in
/// that future, just before the add is sent). After [`IDLE`], offers the warm-up jobs and waits
/// for them; after [`IDLE`] again, offers the measured ones and waits for them. Returns the
/// seconds the measured adds took to send.
pub async fn offered<F, Fut>(run: Run, latencies: &Latencies, add: F) -> f64
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::time::sleep(IDLE).await;
    offer(run.rate, run.warmup, &add).await;
    latencies.wait_for(run.warmup).await;
    latencies.clear();
    tokio::time::sleep(IDLE).await;
    let secs = offer(run.rate, run.jobs, &add).await;
    latencies.wait_for(run.jobs).await;
    secs
}

/// Offers `jobs` jobs at `rate` per second, one at a time, each add started at its due time
/// (`start + k / rate`; late ones at once, never skipped) without waiting for the previous
/// one's reply; returns the seconds it took to send them all.
async fn offer<F, Fut>(rate: u64, jobs: u64, add: &F) -> f64
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let start = Instant::now();
    let mut adds = tokio::task::JoinSet::new();
    for k in 0..jobs {
        let due = start + Duration::from_micros(k * 1_000_000 / rate);
        tokio::time::sleep_until(due.into()).await;
        adds.spawn(add());
    }
    let secs = start.elapsed().as_secs_f64();
    while let Some(added) = adds.join_next().await {
        added.expect("add task");
    }
    secs
}

/// The `q`-quantile of sorted `v`, in ms.
fn quantile_ms(v: &[u64], q: f64) -> f64 {
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    #[allow(clippy::cast_precision_loss)]
    let ms = v[i] as f64 / 1_000.0;
    ms
}

/// The JSON line of `run` for implementation `name`, its measured adds sent in `secs`, with
/// the sorted latencies `v`:
///
/// ```text
/// {"impl":"bullmq-rs","mode":"rate1000-c10","jobs":3000,"offered_per_sec":1000,
///  "achieved_per_sec":..,"p50_ms":..,"p99_ms":..,"p999_ms":..,"max_ms":..}
/// ```
pub fn line(name: &str, run: Run, secs: f64, v: &[u64]) -> String {
    let Run { rate, jobs, .. } = run;
    #[allow(clippy::cast_precision_loss)]
    let achieved = jobs as f64 / secs;
    format!(
        r#"{{"impl":"{name}","mode":"{}","jobs":{jobs},"offered_per_sec":{rate},"achieved_per_sec":{achieved:.1},"p50_ms":{:.3},"p99_ms":{:.3},"p999_ms":{:.3},"max_ms":{:.3}}}"#,
        run.mode(),
        quantile_ms(v, 0.5),
        quantile_ms(v, 0.99),
        quantile_ms(v, 0.999),
        quantile_ms(v, 1.0),
    )
}
