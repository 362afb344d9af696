//! Quick start for what exists today: typed job options, validated as Node.js BullMQ validates
//! them, and written exactly as Node.js BullMQ 6.7.0 writes them to Redis and PostgreSQL.
//!
//! Run with `cargo run --example quickstart`.

use std::time::Duration;

use bullmq::core::codec::{self, KeyStyle};
use bullmq::{Backoff, Deduplication, JobOptions, KeepJobs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let opts = JobOptions::new()
        .attempts(5)
        .backoff(Backoff::exponential(Duration::from_secs(1)))
        .delay(Duration::from_secs(30))
        .remove_on_complete(KeepJobs::Newest(1000))
        .deduplication(Deduplication::new("invoice-42").ttl(Duration::from_secs(60)));
    opts.validate()?;

    // The bytes a Node.js producer would pass to the add script for the same options.
    println!(
        "msgpack (ARGV[3]):   {}",
        hex(&codec::options_to_msgpack(&opts)?)
    );
    // The `opts` field of the job hash on Redis, and the `opts` column on PostgreSQL.
    println!(
        "Redis opts field:    {}",
        codec::options_to_json(&opts, KeyStyle::Short)
    );
    println!(
        "PostgreSQL opts:     {}",
        codec::options_to_json(&opts, KeyStyle::Long)
    );

    // Bad input is refused before anything is written, with the field and the bound.
    if let Err(err) = JobOptions::new()
        .priority(5_000_000)
        .job_id("42")
        .validate()
    {
        println!("rejected:            {err}");
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
