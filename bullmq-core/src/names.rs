//! Validated queue names and key prefixes.

use std::fmt;

use crate::options::ValidationError;

/// The key prefix every Redis key of a queue starts with; `bull` unless configured.
pub const DEFAULT_PREFIX: &str = "bull";

/// A queue name: not empty and without `:`, since `:` separates the parts of every key (both
/// upstream's rules); and, our addition, without control characters or unbalanced `{`/`}`,
/// which would break Redis Cluster hash tags.
///
/// ```
/// use bullmq_core::QueueName;
///
/// assert!(QueueName::new("emails").is_ok());
/// let err = QueueName::new("a:b").unwrap_err();
/// assert_eq!(err.to_string(), "invalid queue name: name: must not contain ':' (got \"a:b\")");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueName(String);

impl QueueName {
    /// Validates `name` as upstream's `QueueBase` does.
    pub fn new(name: impl Into<String>) -> Result<Self, ValidationError> {
        let name = name.into();
        // An empty name has no ':', so checking it first keeps the order of the messages.
        if name.contains(':') {
            return Err(ValidationError::single(
                "queue name",
                "name",
                format!("must not contain ':' (got {name:?})"),
            ));
        }
        let refused = Refused {
            what: "control characters",
            is: char::is_control,
        };
        check_key_part(name, "queue name", "name", &refused).map(Self)
    }

    /// The name as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for QueueName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A key prefix: not empty; free of whitespace and control characters, because the prefix is
/// part of every connection's client name and Redis refuses names with spaces; and with
/// balanced `{…}`, so a Redis Cluster hash tag is never cut in half.
///
/// `:` and `{…}` hash tags are allowed, as upstream allows them.
///
/// ```
/// use bullmq_core::Prefix;
///
/// assert_eq!(Prefix::default().as_str(), "bull");
/// assert!(Prefix::new("{bull}").is_ok());
/// assert!(Prefix::new("").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix(String);

impl Prefix {
    /// Validates `prefix`.
    pub fn new(prefix: impl Into<String>) -> Result<Self, ValidationError> {
        let refused = Refused {
            what: "whitespace or control characters",
            is: |c| c.is_whitespace() || c.is_control(),
        };
        check_key_part(prefix.into(), "prefix", "prefix", &refused).map(Self)
    }

    /// The prefix as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Prefix {
    fn default() -> Self {
        Self(DEFAULT_PREFIX.to_owned())
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Characters a part of a key must not hold, and how the refusal names them.
struct Refused {
    what: &'static str,
    is: fn(char) -> bool,
}

/// The rules a queue name and a prefix share, as they are part of every key: not empty, none
/// of the `refused` characters, balanced braces (a Redis Cluster hash tag is never cut).
fn check_key_part(
    text: String,
    kind: &'static str,
    path: &str,
    refused: &Refused,
) -> Result<String, ValidationError> {
    let fail = |message: String| Err(ValidationError::single(kind, path, message));
    if text.is_empty() {
        return fail("must not be empty".to_owned());
    }
    if let Some(c) = text.chars().find(|c| (refused.is)(*c)) {
        return fail(format!(
            "must not contain {} (found {c:?} in {text:?})",
            refused.what
        ));
    }
    if !braces_balanced(&text) {
        return fail(format!("must not contain unbalanced braces (got {text:?})"));
    }
    Ok(text)
}

/// True when every `{` is closed by a later `}` and no `}` comes unopened.
fn braces_balanced(s: &str) -> bool {
    let mut open = 0usize;
    for c in s.chars() {
        match c {
            '{' => open += 1,
            '}' if open == 0 => return false,
            '}' => open -= 1,
            _ => {}
        }
    }
    open == 0
}
