//! The PostgreSQL schema a backend lives in, validated as upstream validates it.

use std::fmt;

use bullmq_core::options::ValidationError;

/// The schema Node.js BullMQ uses when none is given.
pub const DEFAULT_SCHEMA: &str = "bullmq";

/// The longest identifier PostgreSQL keeps whole (`NAMEDATALEN - 1`); a longer one would be
/// silently truncated, so two long names could name one schema.
pub const MAX_SCHEMA_NAME_LEN: usize = 63;

/// The name of the schema (namespace) that holds every queue of a backend: the PostgreSQL
/// counterpart of the Redis key prefix.
///
/// Only simple identifiers are accepted, exactly those upstream's `quoteSchemaName` accepts:
/// an ASCII letter or `_`, then ASCII letters, digits, `_` or `$`, at most 63 characters. The
/// name is then always double-quoted in DDL and `search_path`, so case is kept (`MyJobs` and
/// `myjobs` are two schemas, as in Node.js).
///
/// ```
/// use bullmq_postgres::SchemaName;
///
/// assert_eq!(SchemaName::default().as_str(), "bullmq");
/// assert_eq!(SchemaName::new("MyJobs").unwrap().quoted(), "\"MyJobs\"");
/// assert!(SchemaName::new("my-jobs").is_err());
/// assert!(SchemaName::new("x".repeat(64)).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SchemaName(String);

impl SchemaName {
    /// Validates `name`.
    pub fn new(name: impl Into<String>) -> Result<Self, ValidationError> {
        let name = name.into();
        if !is_simple_identifier(&name) {
            return Err(ValidationError::single(
                "postgres options",
                "schema",
                format!(
                    "must be a simple identifier: an ASCII letter or `_`, then ASCII letters, \
                     digits, `_` or `$` (got {name:?})"
                ),
            ));
        }
        if name.len() > MAX_SCHEMA_NAME_LEN {
            return Err(ValidationError::single(
                "postgres options",
                "schema",
                format!(
                    "must be at most {MAX_SCHEMA_NAME_LEN} characters (got {})",
                    name.len()
                ),
            ));
        }
        Ok(Self(name))
    }

    /// The name as given.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name double-quoted, for DDL and `search_path`. Safe to splice into SQL: a valid
    /// name holds no quote.
    #[must_use]
    pub fn quoted(&self) -> String {
        format!("\"{}\"", self.0)
    }
}

impl Default for SchemaName {
    fn default() -> Self {
        Self(DEFAULT_SCHEMA.to_owned())
    }
}

impl fmt::Display for SchemaName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `^[A-Za-z_][A-Za-z0-9_$]*$`, upstream's rule.
fn is_simple_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_upstream_accepts() {
        for name in ["bullmq", "_x", "A$b", "Mixed_Case9", &"a".repeat(63)] {
            let schema = SchemaName::new(name).unwrap_or_else(|e| panic!("{name:?}: {e}"));
            assert_eq!(schema.as_str(), name);
        }
    }

    #[test]
    fn refuses_what_upstream_refuses() {
        for name in [
            "",
            "1abc",
            "$x",
            "a-b",
            "a b",
            "a\"b",
            "a;drop schema public",
            "ünïcode",
            "a.b",
            &"a".repeat(64),
        ] {
            let err = SchemaName::new(name).expect_err(name);
            assert_eq!(err.problems()[0].path, "schema", "{name:?}");
        }
    }

    #[test]
    fn too_long_says_the_length() {
        let err = SchemaName::new("a".repeat(64)).expect_err("64 chars");
        assert!(err.to_string().contains("at most 63"), "{err}");
        assert!(err.to_string().contains("got 64"), "{err}");
    }
}
