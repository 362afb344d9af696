//! Inputs the fuzz targets (`fuzz/`, targets `job_hash` and `job_options`) found, each kept as
//! a regression test: what was read is read back the same from what it writes.
#![allow(clippy::unwrap_used)]

use bullmq_core::Job;
use bullmq_core::codec::{self, KeyStyle};

/// Options read and written again in either key style, then read back.
fn assert_round_trips(json: &str) {
    let opts = codec::options_from_json(json).unwrap().options;
    for style in [KeyStyle::Short, KeyStyle::Long] {
        let written = codec::options_to_json(&opts, style);
        let back = codec::options_from_json(&written).unwrap().options;
        assert_eq!(back, opts, "{json} written as {written}");
    }
}

#[test]
fn an_unreadable_compressed_option_reads_back_from_either_key_style() {
    assert_round_trips(r#"{"keepLogs":-1,"failParentOnFailure":true}"#);
    assert_round_trips(r#"{"kl":-1,"de":"x","fpof":"yes"}"#);
}

#[test]
fn a_job_hash_with_an_option_written_twice_reads_back_the_same() {
    let opts = r#"{"parentts":3,"de":{"id":"d"},"kl":{"id":"d"},"kl":2}"#;
    let job = Job::from_hash("1", [("name", "n"), ("opts", opts)]).unwrap();
    eprintln!("{:?}\n{:?}", job.opts, job.invalid_opts);
    eprintln!("{:?}", job.to_hash());
    let again = Job::from_hash("1", job.to_hash()).unwrap();
    assert_eq!(again, job);
    assert_round_trips(opts);
}
