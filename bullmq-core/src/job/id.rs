//! Job ids and the rules for custom ones.

use std::fmt;

use crate::options::ValidationError;

/// A job id as stored: the decimal counter value the datastore assigned, or a custom id.
///
/// Ids read back from the datastore are taken as they are (`JobId::from`); ids a user chooses go
/// through [`JobId::custom`], which applies upstream's rules.
///
/// Redis holds ids as bytes, and another runtime may have written one that is not UTF-8. Such an
/// id keeps its exact bytes ([`JobId::from_bytes`], [`JobId::as_bytes`]), so that the job is
/// finished under the key it was fetched from; its text ([`JobId::as_str`], `Display`) is the
/// bytes escaped (`\xff`), for messages only.
///
/// ```
/// use bullmq_core::JobId;
///
/// let id = JobId::from_bytes(b"job-\xff");
/// assert_eq!(id.as_bytes(), b"job-\xff");
/// assert_eq!(id.to_string(), "job-\\xff");
/// assert!(!id.is_utf8());
/// assert_eq!(JobId::from_bytes(b"42"), JobId::from("42"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId {
    text: String,
    /// The stored bytes, only when they are not UTF-8 (`text` is then their escaped form).
    raw: Option<Box<[u8]>>,
}

impl serde::Serialize for JobId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> serde::Deserialize<'de> for JobId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::from)
    }
}

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
        Ok(Self::from(id))
    }

    /// An id as the store holds it: text when the bytes are UTF-8, else the bytes themselves.
    #[must_use]
    pub fn from_bytes(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) => Self::from(text),
            Err(_) => Self {
                text: bytes.escape_ascii().to_string(),
                raw: Some(bytes.into()),
            },
        }
    }

    /// The id as text (escaped when the stored id is not UTF-8; see [`JobId::as_bytes`]).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The id's stored bytes: what the store must be sent to find the job.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.raw.as_deref().unwrap_or(self.text.as_bytes())
    }

    /// Whether the stored id is UTF-8 (then [`JobId::as_str`] is exactly it).
    #[must_use]
    pub fn is_utf8(&self) -> bool {
        self.raw.is_none()
    }

    /// Consumes the id, returning its text.
    #[must_use]
    pub fn into_string(self) -> String {
        self.text
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
    fn from(text: String) -> Self {
        Self { text, raw: None }
    }
}

impl From<&str> for JobId {
    fn from(id: &str) -> Self {
        Self::from(id.to_owned())
    }
}

impl From<u64> for JobId {
    fn from(id: u64) -> Self {
        Self::from(id.to_string())
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl AsRef<str> for JobId {
    fn as_ref(&self) -> &str {
        &self.text
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
