//! A repeat pattern as any runtime could have stored it, with a zone and dates, parsed by
//! bullmq-cron and run forward a few times. Properties: no panic, no hang (libFuzzer's
//! `-timeout` catches one), and run times that only go forward.
#![no_main]

use arbitrary::Arbitrary;
use bullmq_cron::{CronExpression, CronOptions};
use libfuzzer_sys::fuzz_target;

/// Zones with odd offsets and DST rules, the system zone, and whatever the fuzzer writes.
const ZONES: [&str; 8] = [
    "UTC",
    "Europe/London",
    "America/New_York",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/Santiago",
    "UTC+2",
];

#[derive(Debug, Arbitrary)]
struct Input {
    zone: Option<u8>,
    own_zone: Option<String>,
    current_date: Option<u64>,
    start_date: Option<u64>,
    end_date: Option<u64>,
    hash_seed: Option<String>,
    pattern: String,
}

fuzz_target!(|input: Input| {
    let tz = match (input.zone, input.own_zone) {
        (Some(i), _) => Some(ZONES[usize::from(i) % ZONES.len()].to_owned()),
        (None, own) => own,
    };
    let options = CronOptions {
        tz,
        // From the epoch by default, so that a run does not depend on the clock.
        current_date: Some(input.current_date.unwrap_or(0)),
        start_date: input.start_date,
        end_date: input.end_date,
        hash_seed: input.hash_seed,
    };
    let Ok(mut cron) = CronExpression::parse(&input.pattern, &options) else {
        return;
    };
    let mut last = None;
    for _ in 0..4 {
        let Ok(next) = cron.next_run() else {
            break;
        };
        if let Some(last) = last {
            assert!(next > last, "{next} after {last}");
        }
        last = Some(next);
    }
});
