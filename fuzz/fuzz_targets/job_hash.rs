//! A job hash as any runtime could have written it, one `field=value` a line (a value may
//! not hold a newline; JSON escapes its own), read by `Job::from_hash`. Properties: no
//! panic, and a job that was read is read back the same from the hash it writes.
#![no_main]

use bullmq_core::Job;
use libfuzzer_sys::fuzz_target;

#[path = "common/js_value.rs"]
mod js_value;

/// The job with its raw JSON values (progress, options kept raw) as JavaScript sees them.
fn as_javascript(mut job: Job) -> Job {
    js_value::normalize(&mut job.progress);
    job.opts.extra.values_mut().for_each(js_value::normalize);
    // An unreadable option is named as it was stored, in the key style of its store.
    for invalid in &mut job.invalid_opts {
        invalid.key = js_value::long_key(&invalid.key).to_owned();
    }
    job
}

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
    assert_eq!(
        as_javascript(again),
        as_javascript(job),
        "decode(encode(job)) differs"
    );
});
