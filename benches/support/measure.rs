//! The measurements: this process's CPU clock and peak RSS, Redis's CPU time, and the keys a
//! run leaves behind.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

/// CPU time of this whole process (every thread, live or exited), with nanosecond
/// resolution: `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`, the same accounting Node.js's
/// `process.cpuUsage()` reads through `getrusage` (`/proc/self/stat` only counts 10 ms ticks,
/// and `/proc/self/schedstat` counts the main thread alone). Zero when `BENCH_VALGRIND` is set:
/// valgrind does not serve the vDSO the clock is read through, and its count replaces it.
pub fn process_cpu() -> Duration {
    if std::env::var_os("BENCH_VALGRIND").is_some() {
        return Duration::ZERO;
    }
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(ts.tv_sec).expect("CPU time is positive"),
        u32::try_from(ts.tv_nsec).expect("nanoseconds below 1e9"),
    )
}

/// One section of `INFO`, as Redis prints it.
pub async fn info(con: &mut MultiplexedConnection, section: &str) -> String {
    redis::cmd("INFO")
        .arg(section)
        .query_async(con)
        .await
        .unwrap_or_else(|e| panic!("INFO {section}: {e}"))
}

/// The number `field` of an `INFO` text, when it has one.
pub fn info_number<T: std::str::FromStr>(info: &str, field: &str) -> Option<T> {
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

/// Redis's own CPU time so far, in seconds: `used_cpu_sys + used_cpu_user` of `INFO cpu`.
pub async fn redis_cpu(admin: &mut MultiplexedConnection) -> f64 {
    info(admin, "cpu")
        .await
        .lines()
        .filter_map(|l| {
            l.strip_prefix("used_cpu_sys:")
                .or_else(|| l.strip_prefix("used_cpu_user:"))
        })
        .map(|v| v.trim().parse::<f64>().expect("INFO cpu value"))
        .sum()
}

/// Resets the process's peak resident set size (Linux ≥ 4.0); false where refused.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A `kB` field of `/proc/self/status` (`VmHWM`, `VmRSS`).
pub fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

/// The process's resident memory split by what backs it, and its thread count, from
/// `/proc/self/status`: anonymous pages (heap, arenas, stacks: this process's own) apart from
/// file-backed ones (the executable's code and read-only data, which every process running it
/// shares).
#[derive(Clone, Copy, Debug)]
pub struct Resident {
    /// `VmRSS`.
    pub rss_kb: u64,
    /// `RssAnon`.
    pub anon_kb: u64,
    /// `RssFile`.
    pub file_kb: u64,
    /// `Threads`.
    pub threads: u64,
}

impl Resident {
    /// Reads them now; with `BENCH_SMAPS=<path>` set, also copies `/proc/self/smaps` to
    /// `<path>.<label>` (per mapping, to find which grew).
    pub fn read(label: &str) -> Self {
        if let Some(path) = std::env::var_os("BENCH_SMAPS") {
            let mut path = std::path::PathBuf::from(path).into_os_string();
            path.push(format!(".{label}"));
            std::fs::copy("/proc/self/smaps", &path).expect("copy /proc/self/smaps");
        }
        Self {
            rss_kb: status_kb("VmRSS"),
            anon_kb: status_kb("RssAnon"),
            file_kb: status_kb("RssFile"),
            threads: status_kb("Threads"),
        }
    }
}

/// The connection a harness measures and cleans up through, apart from the one it measures.
pub async fn admin(url: &str) -> MultiplexedConnection {
    let client = redis::Client::open(url).expect("REDIS_URL");
    // Generous: a server run under valgrind (to count its instructions) answers slowly.
    let config = redis::AsyncConnectionConfig::new()
        .set_response_timeout(Some(std::time::Duration::from_secs(60)));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .expect("admin connection")
}

/// The URL of the server the harness reads and cleans up on: `BENCH_ADMIN_URL`, else `url`.
/// A cluster URL (`redis+cluster://…`) needs the former: the plain URL of the node that
/// serves the benchmark's keys (a one-primary cluster serves them all).
pub fn admin_url(url: &str) -> String {
    match std::env::var("BENCH_ADMIN_URL") {
        Ok(admin) => admin,
        Err(_) => {
            assert!(
                !url.contains("+cluster://"),
                "a cluster URL needs BENCH_ADMIN_URL=redis://<the node serving the keys>"
            );
            url.to_owned()
        }
    }
}

/// `prefix` behind a short hash tag (`{bench}prefix`) on a cluster, where a queue's keys must
/// share a slot. Short as an application's would be (`{myapp}`): the server hashes the tag of
/// every key a call or a script's `redis.call` names, at some 10 instructions a byte, so a tag
/// as long as the whole unique prefix (some 45 bytes) costs a cluster node 8 to 10 % more
/// per job.
pub fn keyed_for(url: &str, prefix: String) -> String {
    if url.contains("+cluster://") {
        format!("{{bench}}{prefix}")
    } else {
        prefix
    }
}

/// Deletes every key under `prefix`.
pub async fn delete_prefix(admin: &mut MultiplexedConnection, prefix: &str) {
    let mut cursor = 0_u64;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(admin)
            .await
            .expect("SCAN");
        if !keys.is_empty() {
            redis::cmd("UNLINK")
                .arg(&keys)
                .query_async::<()>(admin)
                .await
                .expect("UNLINK");
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
}

/// A prefix no other run uses: `{harness}-{tag}-{pid}-{unix nanoseconds}` (the harness's
/// part, such as `bench-add-rs`, tells the implementations' keys apart).
pub fn unique_prefix(harness: &str, tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos();
    format!("{harness}-{tag}-{}-{nanos}", std::process::id())
}

/// The clocks read as a measured stretch starts.
pub struct Meter {
    redis_before: f64,
    cpu_before: Duration,
    start: Instant,
}

impl Meter {
    /// Reads Redis's CPU, then this process's, then starts the wall clock.
    pub async fn start(admin: &mut MultiplexedConnection) -> Self {
        let redis_before = redis_cpu(admin).await;
        let cpu_before = process_cpu();
        Self {
            redis_before,
            cpu_before,
            start: Instant::now(),
        }
    }

    /// Stops the wall clock, then reads this process's CPU, then Redis's.
    pub async fn stop(self, admin: &mut MultiplexedConnection) -> Usage {
        let secs = self.start.elapsed().as_secs_f64();
        let cpu = (process_cpu() - self.cpu_before).as_secs_f64();
        let redis = redis_cpu(admin).await - self.redis_before;
        Usage { secs, cpu, redis }
    }
}

/// What a measured stretch took, in seconds.
pub struct Usage {
    /// Wall time.
    pub secs: f64,
    /// This process's CPU time.
    pub cpu: f64,
    /// Redis's CPU time.
    pub redis: f64,
}

impl PerJob for Usage {
    /// `"secs":..,"jobs_per_sec":..,"client_cpu_us_per_job":..,"redis_cpu_us_per_job":..`.
    fn per_job_fields(&self, jobs: u64) -> String {
        per_job_fields(jobs, self.secs, self.cpu, "redis", self.redis)
    }
}

/// What a measured stretch took, as the JSON fields the add and worker lines share.
pub trait PerJob {
    /// The fields for `jobs` jobs.
    fn per_job_fields(&self, jobs: u64) -> String;
}

/// The fields every line has, for `jobs` jobs that took `secs` of wall time, `cpu` seconds of
/// this process's CPU and `server_cpu` of the server's (named `server`):
/// `"secs":..,"jobs_per_sec":..,"client_cpu_us_per_job":..,"<server>_cpu_us_per_job":..`.
pub fn per_job_fields(jobs: u64, secs: f64, cpu: f64, server: &str, server_cpu: f64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let jobs = jobs as f64;
    format!(
        r#""secs":{secs:.4},"jobs_per_sec":{:.1},"client_cpu_us_per_job":{:.3},"{server}_cpu_us_per_job":{:.3}"#,
        jobs / secs,
        cpu * 1e6 / jobs,
        server_cpu * 1e6 / jobs,
    )
}

/// The process's peak resident set size over a measured stretch: `VmHWM` where the high-water
/// mark was reset as the stretch started, else the largest `VmRSS` sampled during it.
pub struct PeakRss {
    reset: bool,
    max_kb: u64,
}

impl PeakRss {
    /// Resets the high-water mark (see [`reset_peak_rss`]) as a stretch starts.
    pub fn start() -> Self {
        Self::after_reset(reset_peak_rss())
    }

    /// For a stretch whose high-water mark was reset (`reset`), or could not be.
    pub fn after_reset(reset: bool) -> Self {
        Self { reset, max_kb: 0 }
    }

    /// Samples `VmRSS`, where the high-water mark could not be reset.
    pub fn sample(&mut self) {
        if !self.reset {
            self.max_kb = self.max_kb.max(status_kb("VmRSS"));
        }
    }

    /// The peak, in kB.
    pub fn kb(&self) -> u64 {
        if self.reset {
            status_kb("VmHWM")
        } else {
            self.max_kb
        }
    }
}
