//! A job scheduler read back from its stored hash (`<queue>:repeat:<id>`, as upstream's
//! `storeJobScheduler` writes it): a shape both stores share, since PostgreSQL keeps the same
//! fields.

use std::time::Duration;

use super::JobSchedulerRecord;
use crate::codec::{CodecError, options_from_json};

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

impl JobSchedulerRecord {
    /// Decodes a scheduler hash and the scheduler's score (its next run) into a record, as
    /// Node.js's `transformSchedulerData` does.
    ///
    /// Returns `None` for an empty hash: no such scheduler. The template data stays JSON
    /// text; the template options are decoded in either key style.
    pub fn from_hash(
        id: &str,
        fields: impl IntoIterator<Item = (String, String)>,
        next_millis: Option<u64>,
    ) -> Result<Option<Self>, CodecError> {
        let mut record = Self {
            id: id.to_owned(),
            next_millis,
            ..Self::default()
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
                // The hash's raw numbers, as stored (0 included).
                #[allow(deprecated)]
                "startDate" => s.start_date = parse_int(&value),
                #[allow(deprecated)]
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
        let record = JobSchedulerRecord::from_hash("s1", hash, Some(1_700_000_000_250))
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
            JobSchedulerRecord::from_hash("s", Vec::new(), None).unwrap(),
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
