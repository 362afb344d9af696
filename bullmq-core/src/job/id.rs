//! Job ids and the rules for custom ones.

use std::fmt;

use crate::options::ValidationError;

/// A job id as stored: the decimal counter value the datastore assigned, or a custom id.
///
/// Ids read back from the datastore are taken as they are (`JobId::from`); ids a user chooses go
/// through [`JobId::custom`], which applies upstream's rules.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct JobId(String);

impl JobId {
    /// Validates a custom job id as Node.js BullMQ does before adding a job:
    /// - not `0` and not starting with `0:`;
    /// - not integer-like (`"123"`, `"-4"`), since integers are the ids the queue generates;
    /// - no `:` except in upstream's three-part form (`repeat:<schedulerId>:<millis>`).
    ///
    /// ```
    /// use bullmq_core::JobId;
    ///
    /// assert!(JobId::custom("invoice-42").is_ok());
    /// assert!(JobId::custom("repeat:daily:1700000000000").is_ok());
    /// assert_eq!(
    ///     JobId::custom("42").unwrap_err().to_string(),
    ///     "invalid job id: jobId: custom ids cannot be integers (got \"42\")"
    /// );
    /// ```
    pub fn custom(id: impl Into<String>) -> Result<Self, ValidationError> {
        let id = id.into();
        let fail = |message: String| Err(ValidationError::single("job id", "jobId", message));
        if id.is_empty() {
            return fail("must not be empty".to_owned());
        }
        if id == "0" || id.starts_with("0:") {
            return fail(format!("cannot be '0' or start with '0:' (got {id:?})"));
        }
        if is_integer_like(&id) {
            return fail(format!("custom ids cannot be integers (got {id:?})"));
        }
        if id.contains(':') && id.split(':').count() != 3 {
            return fail(format!(
                "custom ids cannot contain ':' except in the form 'a:b:c' (got {id:?})"
            ));
        }
        Ok(Self(id))
    }

    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the id, returning its text.
    #[must_use]
    pub fn into_string(self) -> String {
        self.0
    }
}

/// Upstream rejects an id when `String(parseInt(id, 10)) === id`. That holds exactly for
/// canonical decimal integers whose JavaScript rendering is the same digits: below 1e21 (JS
/// switches to exponent notation there) and not losing digits to double rounding.
fn is_integer_like(id: &str) -> bool {
    let digits = id.strip_prefix('-').unwrap_or(id);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !canonical || id == "-0" {
        return false;
    }
    match id.parse::<f64>() {
        // Rust prints finite doubles below 1e21 with the same shortest digits as JavaScript.
        Ok(value) if value.abs() < 1e21 => format!("{value}") == id,
        _ => false,
    }
}

impl From<String> for JobId {
    fn from(id: String) -> Self {
        Self(id)
    }
}

impl From<&str> for JobId {
    fn from(id: &str) -> Self {
        Self(id.to_owned())
    }
}

impl From<u64> for JobId {
    fn from(id: u64) -> Self {
        Self(id.to_string())
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for JobId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::is_integer_like;

    #[test]
    fn integer_like_matches_javascript_parse_int_round_trip() {
        for id in ["1", "42", "-5", "9007199254740993"] {
            // 2^53 + 1 prints as ...992 in JS, so it is NOT integer-like there.
            assert_eq!(is_integer_like(id), id != "9007199254740993", "{id}");
        }
        for id in [
            "0123",
            "+5",
            " 5",
            "5 ",
            "1e3",
            "1.0",
            "-0",
            "abc",
            "1000000000000000000000",
        ] {
            assert!(!is_integer_like(id), "{id}");
        }
        assert!(is_integer_like("100000000000000000000"));
    }
}
