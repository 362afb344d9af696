//! A job hash as any runtime could have written it, one `field=value` a line (a value may
//! not hold a newline; JSON escapes its own), read by `Job::from_hash`. Properties: no
//! panic, and a job that was read is read back the same from the hash it writes.
#![no_main]

use bullmq_core::Job;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let fields: Vec<(&str, &str)> = text
        .lines()
        .map(|line| line.split_once('=').unwrap_or((line, "")))
        .collect();
    let Ok(job) = Job::from_hash("1", fields) else {
        return;
    };
    let again = Job::from_hash("1", job.to_hash())
        .unwrap_or_else(|e| panic!("the hash a job writes must read back: {e}"));
    assert_eq!(again, job, "decode(encode(job)) differs");
});
