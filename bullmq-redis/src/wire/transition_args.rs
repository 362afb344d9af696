//! Packed arguments of the worker-side scripts (`moveToActive`, `moveToFinished`,
//! `moveToDelayed`, `retryJob`), byte-identical to what Node.js BullMQ sends.
//!
//! Node.js builds these as JavaScript objects whose keys are all present, `undefined` ones
//! included; msgpackr (with `encodeUndefinedAsNil`) writes those as nil. So every map here has
//! a fixed set of keys in Node's order, absent values packed as nil.

use std::time::Duration;

use bullmq_core::backend::{FetchParams, FieldUpdates, RateLimiter};
use bullmq_core::codec::{CodecError, WireMap, WireValue, pack_msgpack};
use bullmq_core::options::KeepJobs;

/// The options map of `moveToFinished` (`ARGV[8]`).
///
/// Node.js packs the finishing worker's settings (`name`, `limiter`, `lockDuration`) whether or
/// not it fetches the next job; the script only reads them when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FinishOpts<'a> {
    /// The lock token of the job being finished (the next job, if fetched, is locked with it too).
    pub(crate) token: &'a str,
    /// The worker's name, stored as the next job's `pb`.
    pub(crate) worker_name: Option<&'a str>,
    /// Retention of the finished job, sent as `keepJobs`: `RemoveAll` as `{count: 0}`,
    /// `KeepAll` as `{count: -1}`, `Number(n)` as `{count: n}`, the object form as it is.
    pub(crate) keep_jobs: &'a KeepJobs,
    /// The worker's rate limit.
    pub(crate) limiter: Option<&'a RateLimiter>,
    /// The worker's lock duration.
    pub(crate) lock_duration: Option<Duration>,
    /// The job's maximum attempts (Node.js defaults it to 0).
    pub(crate) attempts: u32,
    /// Data points of per-minute metrics to keep; `None` sends `''` (metrics off).
    pub(crate) max_metrics_size: Option<u32>,
    /// The job's `failParentOnFailure`.
    pub(crate) fpof: bool,
    /// The job's `continueParentOnFailure`.
    pub(crate) cpof: bool,
    /// The job's `ignoreDependencyOnFailure`.
    pub(crate) idof: bool,
    /// The job's `removeDependencyOnFailure`.
    pub(crate) rdof: bool,
}

fn limiter(l: &RateLimiter) -> WireValue<'static> {
    let mut m = WireMap::default();
    m.push("max", WireValue::UInt(l.max));
    m.push("duration", WireValue::millis(l.duration));
    WireValue::Map(m)
}

/// The `keepJobs` object the finishing scripts read: `true` becomes `{count: 0}` (remove at
/// once), `false` `{count: -1}` (keep all), a number `n` `{count: n}`, and the object form is
/// sent as it is (`age` in seconds).
fn keep_jobs_map(k: &KeepJobs) -> WireValue<'static> {
    // Room for the object form's three keys: packed per job, not grown one key at a time.
    let mut m = WireMap::with_capacity(3);
    match k {
        KeepJobs::RemoveAll => m.push("count", WireValue::UInt(0)),
        KeepJobs::KeepAll => m.push("count", WireValue::Int(-1)),
        KeepJobs::Number(n) => m.push("count", WireValue::UInt(*n)),
        KeepJobs::Policy { age, count, limit } => {
            m.push("age", age.map(WireValue::seconds));
            m.push("count", count.map(WireValue::UInt));
            m.push("limit", limit.map(WireValue::UInt));
        }
    }
    WireValue::Map(m)
}

/// The options map of `moveToActive` (`ARGV[3]`), which `moveToDelayed` also takes when it
/// fetches the next job: `{token, lockDuration, limiter, name}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FetchOpts<'a> {
    /// The token the taken job is locked with. A transition that fetches locks the next job
    /// with the token of the job it moves, as upstream does.
    pub(crate) token: &'a str,
    /// The worker's lock duration (nil when unset, as a `Queue`'s `Job` sends it).
    pub(crate) lock_duration: Option<Duration>,
    /// The worker's rate limit.
    pub(crate) limiter: Option<&'a RateLimiter>,
    /// The worker's name, stored as the job's `pb`.
    pub(crate) worker_name: Option<&'a str>,
}

impl<'a> FetchOpts<'a> {
    /// The options of a plain `moveToActive` with `fetch`'s token and settings.
    #[must_use]
    pub(crate) fn of(fetch: &'a FetchParams) -> Self {
        Self {
            token: fetch.token.as_str(),
            lock_duration: Some(fetch.lock_duration),
            limiter: fetch.limiter.as_ref(),
            worker_name: fetch.worker_name.as_deref(),
        }
    }
}

/// Packs the options map of `moveToActive` (`ARGV[3]`).
pub(crate) fn pack_fetch_opts(o: &FetchOpts<'_>) -> Result<Vec<u8>, CodecError> {
    let mut m = WireMap::default();
    m.push("token", WireValue::text(o.token));
    m.push(
        "lockDuration",
        WireValue::or_nil(o.lock_duration.map(WireValue::millis)),
    );
    m.push("limiter", WireValue::or_nil(o.limiter.map(limiter)));
    m.push(
        "name",
        WireValue::or_nil(o.worker_name.map(WireValue::text)),
    );
    pack_msgpack("moveToActive options", &WireValue::Map(m))
}

/// Packs the options map of `moveToFinished` (`ARGV[8]`).
pub(crate) fn pack_finish_opts(o: &FinishOpts<'_>) -> Result<Vec<u8>, CodecError> {
    let mut m = WireMap::with_capacity(11);
    m.push("token", WireValue::text(o.token));
    m.push(
        "name",
        WireValue::or_nil(o.worker_name.map(WireValue::text)),
    );
    m.push("keepJobs", keep_jobs_map(o.keep_jobs));
    m.push("limiter", WireValue::or_nil(o.limiter.map(limiter)));
    m.push(
        "lockDuration",
        WireValue::or_nil(o.lock_duration.map(WireValue::millis)),
    );
    m.push("attempts", WireValue::UInt(u64::from(o.attempts)));
    m.push(
        "maxMetricsSize",
        o.max_metrics_size
            .map_or_else(|| WireValue::text(""), |n| WireValue::UInt(u64::from(n))),
    );
    m.push("fpof", WireValue::Bool(o.fpof));
    m.push("cpof", WireValue::Bool(o.cpof));
    m.push("idof", WireValue::Bool(o.idof));
    m.push("rdof", WireValue::Bool(o.rdof));
    pack_msgpack("moveToFinished options", &WireValue::Map(m))
}

/// Packs `fieldsToUpdate` as the flat `[field, value, …]` array the scripts `HMSET`, in
/// Node's order (`failedReason`, `stacktrace` as a JSON array, `tm`); `None` when there is
/// nothing to write, which the scripts receive as an empty argument.
pub(crate) fn pack_field_updates(f: &FieldUpdates) -> Result<Option<Vec<u8>>, CodecError> {
    let stacktrace = f
        .stacktrace
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| CodecError::Encode {
            what: "stacktrace",
            reason: e.to_string(),
        })?;
    let mut items = Vec::new();
    let entries = [
        ("failedReason", f.failed_reason.as_deref()),
        ("stacktrace", stacktrace.as_deref()),
        ("tm", f.telemetry_metadata.as_deref()),
    ];
    for (field, value) in entries {
        if let Some(value) = value {
            items.push(WireValue::text(field));
            items.push(WireValue::text(value));
        }
    }
    if items.is_empty() {
        return Ok(None);
    }
    pack_msgpack("fields to update", &WireValue::Array(items)).map(Some)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! Expected bytes were produced by msgpackr (as Node.js BullMQ configures it) from the
    //! objects Node.js builds for the same inputs.

    use super::*;
    use bullmq_core::backend::LockToken;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn fetch(limiter: Option<RateLimiter>, name: Option<&str>) -> FetchParams {
        FetchParams {
            token: LockToken::new("ignored"),
            lock_duration: Duration::from_secs(30),
            limiter,
            worker_name: name.map(str::to_owned),
        }
    }

    #[test]
    fn fetch_opts_match_msgpackr() {
        let limiter = RateLimiter {
            max: 10,
            duration: Duration::from_secs(1),
        };
        let params = fetch(Some(limiter), Some("alpha"));
        let full = pack_fetch_opts(&FetchOpts {
            token: "w1:1",
            ..FetchOpts::of(&params)
        })
        .unwrap();
        assert_eq!(
            hex(&full),
            "de0004a5746f6b656ea477313a31ac6c6f636b4475726174696f6ecd7530a76c696d69746572de0002\
             a36d61780aa86475726174696f6ecd03e8a46e616d65a5616c706861"
        );
    }

    fn finish<'a>(keep: &'a KeepJobs) -> FinishOpts<'a> {
        FinishOpts {
            token: "tok",
            worker_name: None,
            keep_jobs: keep,
            limiter: None,
            lock_duration: Some(Duration::from_secs(30)),
            attempts: 0,
            max_metrics_size: None,
            fpof: false,
            cpof: false,
            idof: false,
            rdof: false,
        }
    }

    #[test]
    fn finish_opts_keep_all_match_msgpackr() {
        let keep = KeepJobs::KeepAll;
        assert_eq!(
            hex(&pack_finish_opts(&finish(&keep)).unwrap()),
            "de000ba5746f6b656ea3746f6ba46e616d65c0a86b6565704a6f6273de0001a5636f756e74ffa76c69\
             6d69746572c0ac6c6f636b4475726174696f6ecd7530a8617474656d70747300ae6d61784d657472\
             69637353697a65a0a466706f66c2a463706f66c2a469646f66c2a472646f66c2"
        );
    }

    #[test]
    fn finish_opts_remove_all_match_msgpackr() {
        let keep = KeepJobs::RemoveAll;
        let opts = FinishOpts {
            lock_duration: None,
            attempts: 1,
            ..finish(&keep)
        };
        assert_eq!(
            hex(&pack_finish_opts(&opts).unwrap()),
            "de000ba5746f6b656ea3746f6ba46e616d65c0a86b6565704a6f6273de0001a5636f756e7400a76c69\
             6d69746572c0ac6c6f636b4475726174696f6ec0a8617474656d70747301ae6d61784d6574726963\
             7353697a65a0a466706f66c2a463706f66c2a469646f66c2a472646f66c2"
        );
    }

    #[test]
    fn finish_opts_policy_match_msgpackr() {
        let keep = KeepJobs::Policy {
            age: Some(Duration::from_secs(3600)),
            count: Some(5),
            limit: Some(100),
        };
        let limiter = RateLimiter {
            max: 2,
            duration: Duration::from_secs(60),
        };
        let opts = FinishOpts {
            worker_name: Some("w"),
            limiter: Some(&limiter),
            lock_duration: Some(Duration::from_secs(5)),
            attempts: 3,
            max_metrics_size: Some(100),
            fpof: true,
            idof: true,
            ..finish(&keep)
        };
        assert_eq!(
            hex(&pack_finish_opts(&opts).unwrap()),
            "de000ba5746f6b656ea3746f6ba46e616d65a177a86b6565704a6f6273de0003a3616765cd0e10a5\
             636f756e7405a56c696d697464a76c696d69746572de0002a36d617802a86475726174696f6ecdea\
             60ac6c6f636b4475726174696f6ecd1388a8617474656d70747303ae6d61784d6574726963735369\
             7a6564a466706f66c3a463706f66c2a469646f66c3a472646f66c2"
        );
    }

    #[test]
    fn keep_newest_sends_a_count() {
        let keep = KeepJobs::Number(7);
        let bytes = pack_finish_opts(&finish(&keep)).unwrap();
        let needle = [
            &b"keepJobs"[..],
            &[0xde, 0x00, 0x01, 0xa5],
            b"count",
            &[0x07],
        ]
        .concat();
        assert!(bytes.windows(needle.len()).any(|w| w == needle));
    }

    #[test]
    fn field_updates_match_msgpackr() {
        let all = FieldUpdates {
            failed_reason: Some("boom".to_owned()),
            stacktrace: Some(vec!["Error: boom\n    at x".to_owned()]),
            telemetry_metadata: Some("abc".to_owned()),
        };
        assert_eq!(
            hex(&pack_field_updates(&all).unwrap().unwrap()),
            "96ac6661696c6564526561736f6ea4626f6f6daa737461636b7472616365b95b224572726f723a2062\
             6f6f6d5c6e2020202061742078225da2746da3616263"
        );
        let stack_only = FieldUpdates {
            stacktrace: Some(vec![]),
            ..FieldUpdates::default()
        };
        assert_eq!(
            hex(&pack_field_updates(&stack_only).unwrap().unwrap()),
            "92aa737461636b7472616365a25b5d"
        );
        assert_eq!(pack_field_updates(&FieldUpdates::default()).unwrap(), None);
    }
}
