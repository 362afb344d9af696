//! What the chaos soaks share: how long they inject faults and the seed of their random
//! sequence, both from the environment, and the generator the seed drives.

use std::time::Duration;

/// How long a soak injects faults (`BULLMQ_SOAK_SECS`, else `default_secs`: a smoke run for
/// CI; raise it for a long run on demand) and its seed (`BULLMQ_SOAK_SEED`, else the clock's;
/// the soak prints it, so that a failing sequence of faults can be replayed).
pub fn soak_settings(default_secs: u64) -> (Duration, u64) {
    let secs = std::env::var("BULLMQ_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_secs);
    let seed = std::env::var("BULLMQ_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(1, |d| d.as_secs() ^ u64::from(d.subsec_nanos())) | 1
        });
    (Duration::from_secs(secs), seed)
}

/// xorshift64*, so a run's faults and delays are reproducible from its seed.
pub fn next_random(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Counts the runs beyond each job's first (`runs`: when each job was seen starting) and
/// panics on one that no fault explains: a job runs again only within `window` after one of
/// the `faults` (when each began).
pub fn explained_reruns(
    runs: &mut std::collections::HashMap<String, Vec<std::time::Instant>>,
    faults: &[std::time::Instant],
    window: Duration,
) -> usize {
    let last_fault = faults.iter().max().copied();
    let mut reruns = 0;
    for (id, times) in runs {
        times.sort();
        for &at in times.iter().skip(1) {
            reruns += 1;
            assert!(
                faults
                    .iter()
                    .any(|&f| f <= at && at.duration_since(f) <= window),
                "job {id} ran again {:?} after the last fault, with no fault to explain it",
                last_fault.map(|f| at.saturating_duration_since(f))
            );
        }
    }
    reruns
}
