//! RESP bytes, as a server (or a script another runtime changed) could send them, parsed by
//! redis-rs and read by every reply decoder of the Redis backend. Property: none panics.
#![no_main]

use bullmq_core::JobId;
use bullmq_redis::__private::reply;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(v) = redis::parse_redis_value(bytes) else {
        return;
    };
    if let Ok(next) = reply::next_job("fuzz", &v)
        && let Some(fields) = reply::fetched_fields(&v)
    {
        assert!(
            next.job.is_some(),
            "a fetch reply with fields must give a job"
        );
        let _ = reply::needs_attention(fields);
    }
    let _ = reply::needs_attention(&v);
    let _ = reply::job("1", &v);
    let _ = reply::fetched_job(JobId::from("1"), &v);
    let _ = reply::field_pairs("1", &v);
    let _ = reply::scored_members("fuzz", &v);
    let _ = reply::id_items(&v);
    let _ = reply::text_items(&v);
    let _ = reply::counts(&v);
    let _ = reply::text_pairs(&v);
    let _ = reply::expect_int("fuzz", &v);
    let _ = reply::scan_page("fuzz", &v);
    let _ = reply::finish_status(&v);
    let _ = reply::metrics(&v);
    let _ = reply::marker(&v);
    let _ = reply::stream_events(&v);
    if let Ok(page) = reply::paginate(&v) {
        for fields in page.jobs {
            let _ = reply::job("1", fields);
        }
    }
});
