//! Wire shapes of the job-scheduler operations: the schedule packed for `addJobScheduler`, and
//! the scheduler hash (`<queue>:repeat:<id>`) read back.
//!
//! The template and iteration options travel as ordinary packed job options
//! ([`super::options_to_msgpack`]); only the schedule itself has a shape of its own.

use std::time::Duration;

use super::msgpack;
use super::wire::{WireMap, WireValue};
use super::{CodecError, options_from_json};
use crate::backend::JobSchedulerRecord;
use crate::scheduling::{RepeatOptions, truthy};

/// Packs `ARGV[2]` of `addJobScheduler`: the schedule the script stores in the scheduler hash.
///
/// Node.js always sends the same eight keys in the same order (`name`, `startDate`, `endDate`,
/// `tz`, `pattern`, `every`, `limit`, `offset`), writing the ones it has no value for as nil;
/// so do we, which keeps the bytes identical. As in Node.js, `offset` is only sent alongside
/// `every`, and a zero offset or date counts as none.
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::codec::pack_job_scheduler_opts;
/// use bullmq_core::scheduling::RepeatOptions;
///
/// let every = RepeatOptions { every: Some(Duration::from_secs(1)), ..RepeatOptions::default() };
/// let bytes = pack_job_scheduler_opts("tick", &every)?;
/// assert_eq!(&bytes[..3], &[0xde, 0x00, 0x08]); // a map16 of eight entries
/// # Ok::<(), bullmq_core::codec::CodecError>(())
/// ```
pub fn pack_job_scheduler_opts(
    name: &str,
    schedule: &RepeatOptions,
) -> Result<Vec<u8>, CodecError> {
    let offset = schedule
        .every
        .and(schedule.offset)
        .filter(|o| !o.is_zero())
        .map(WireValue::millis);
    let mut m = WireMap::default();
    m.push("name", WireValue::text(name));
    m.push(
        "startDate",
        WireValue::or_nil(truthy(schedule.start_date).map(WireValue::UInt)),
    );
    m.push(
        "endDate",
        WireValue::or_nil(truthy(schedule.end_date).map(WireValue::UInt)),
    );
    m.push(
        "tz",
        WireValue::or_nil(schedule.tz.as_deref().map(WireValue::text)),
    );
    m.push(
        "pattern",
        WireValue::or_nil(schedule.pattern.as_deref().map(WireValue::text)),
    );
    m.push(
        "every",
        WireValue::or_nil(schedule.every.map(WireValue::millis)),
    );
    m.push(
        "limit",
        WireValue::or_nil(schedule.limit.map(WireValue::UInt)),
    );
    m.push("offset", WireValue::or_nil(offset));
    let mut out = Vec::with_capacity(64);
    msgpack::map(&mut out, &m).map_err(|e| CodecError::Encode {
        what: "job scheduler options",
        reason: e.to_string(),
    })?;
    Ok(out)
}

/// Reads an integer the way JavaScript's `parseInt` does: an optional sign and the leading
/// digits, ignoring the rest (`"12.5"` reads as 12); `None` when there are no digits or the
/// number is negative.
fn parse_int(s: &str) -> Option<u64> {
    let s = s.trim_start();
    let digits = s.strip_prefix('+').unwrap_or(s);
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// Decodes a scheduler hash (`<queue>:repeat:<id>`, as `storeJobScheduler` writes it) and the
/// scheduler's score (its next run) into a record, as Node.js's `transformSchedulerData` does.
///
/// Returns `None` for an empty hash: no such scheduler. The template data stays JSON text; the
/// template options are decoded in either key style.
pub fn job_scheduler_from_hash(
    id: &str,
    fields: impl IntoIterator<Item = (String, String)>,
    next_millis: Option<u64>,
) -> Result<Option<JobSchedulerRecord>, CodecError> {
    let mut record = JobSchedulerRecord {
        id: id.to_owned(),
        next_millis,
        ..JobSchedulerRecord::default()
    };
    let mut any = false;
    for (field, value) in fields {
        any = true;
        // Like Node.js, an empty value counts as absent.
        if value.is_empty() {
            continue;
        }
        let s = &mut record.schedule;
        match field.as_str() {
            "name" => record.name = value,
            "ic" => record.iteration_count = parse_int(&value).unwrap_or_default(),
            "limit" => s.limit = parse_int(&value),
            "startDate" => s.start_date = parse_int(&value),
            "endDate" => s.end_date = parse_int(&value),
            "tz" => s.tz = Some(value),
            "pattern" => s.pattern = Some(value),
            "every" => s.every = parse_int(&value).map(Duration::from_millis),
            "offset" => s.offset = parse_int(&value).map(Duration::from_millis),
            "data" => record.template_data = Some(value),
            "opts" => record.template_opts = Some(options_from_json(&value)?.options),
            _ => {}
        }
    }
    Ok(any.then_some(record))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pairs(fields: &[(&str, &str)]) -> Vec<(String, String)> {
        fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_schedule_packs_eight_entries_with_nils() {
        let schedule = RepeatOptions {
            every: Some(Duration::from_millis(1000)),
            offset: Some(Duration::from_millis(250)),
            ..RepeatOptions::default()
        };
        let bytes = pack_job_scheduler_opts("n", &schedule).unwrap();
        let mut expected = vec![0xde, 0x00, 0x08];
        let mut entry = |k: &str, v: &[u8]| {
            rmp::encode::write_str(&mut expected, k).unwrap();
            expected.extend_from_slice(v);
        };
        entry("name", &[0xa1, b'n']);
        entry("startDate", &[0xc0]);
        entry("endDate", &[0xc0]);
        entry("tz", &[0xc0]);
        entry("pattern", &[0xc0]);
        entry("every", &[0xcd, 0x03, 0xe8]);
        entry("limit", &[0xc0]);
        entry("offset", &[0xcc, 0xfa]);
        assert_eq!(bytes, expected);
    }

    #[test]
    fn offset_without_every_is_not_sent() {
        let schedule = RepeatOptions {
            pattern: Some("* * * * *".to_owned()),
            offset: Some(Duration::from_millis(5)),
            ..RepeatOptions::default()
        };
        let bytes = pack_job_scheduler_opts("n", &schedule).unwrap();
        let value: serde_json::Value = rmp_serde::from_slice(&bytes).unwrap();
        assert_eq!(value["offset"], serde_json::Value::Null);
        assert_eq!(value["pattern"], "* * * * *");
    }

    #[test]
    fn scheduler_hash_decodes_like_node() {
        let hash = pairs(&[
            ("name", "tick"),
            ("every", "1000"),
            ("offset", "250"),
            ("limit", "5"),
            ("ic", "3"),
            ("data", r#"{"a":1}"#),
            ("opts", r#"{"attempts":2,"kl":4}"#),
        ]);
        let record = job_scheduler_from_hash("s1", hash, Some(1_700_000_000_250))
            .unwrap()
            .unwrap();
        assert_eq!(record.name, "tick");
        assert_eq!(record.next_millis, Some(1_700_000_000_250));
        assert_eq!(record.iteration_count, 3);
        assert_eq!(record.schedule.every, Some(Duration::from_secs(1)));
        assert_eq!(record.schedule.offset, Some(Duration::from_millis(250)));
        assert_eq!(record.schedule.limit, Some(5));
        assert_eq!(record.template_data.as_deref(), Some(r#"{"a":1}"#));
        let opts = record.template_opts.unwrap();
        assert_eq!(opts.attempts, Some(2));
        assert_eq!(opts.keep_logs, Some(4));
    }

    #[test]
    fn empty_hash_is_no_scheduler() {
        assert_eq!(
            job_scheduler_from_hash("s", Vec::new(), None).unwrap(),
            None
        );
    }

    #[test]
    fn parse_int_follows_javascript() {
        assert_eq!(parse_int("12.5"), Some(12));
        assert_eq!(parse_int("1700000000000"), Some(1_700_000_000_000));
        assert_eq!(parse_int("abc"), None);
        assert_eq!(parse_int("-3"), None);
    }
}
