//! The relay's topic grammar, as upstream's `includes/relayTopics.lua` and its SQL twin read it,
//! checked before anything is sent so that the error names the fault.
//!
//! Topics are dot-separated keypaths (`queues.emails.jobs.42.progress`): at most 512 bytes and
//! 16 segments, each of `A-Z a-z 0-9 _ : % -` (anything else percent-encoded by the caller).
//! Patterns may also use `*` (exactly one segment) and `>` (one or more trailing segments, last
//! segment only). Node, endpoint and namespace ids are 1 to 64 of `A-Z a-z 0-9 _ -`.

use crate::options::ValidationError;

/// The longest topic or pattern, in bytes.
pub const MAX_TOPIC_LENGTH: usize = 512;

/// The most segments a topic or pattern may have.
pub const MAX_TOPIC_SEGMENTS: usize = 16;

/// The longest node, endpoint or namespace id.
pub const MAX_ID_LENGTH: usize = 64;

fn segment_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '%' | '-')
}

/// Why `value` is not a valid topic (or, with `wildcards`, pattern); `None` when it is.
fn fault(value: &str, wildcards: bool) -> Option<String> {
    if value.is_empty() {
        return Some("must not be empty".into());
    }
    if value.len() > MAX_TOPIC_LENGTH {
        return Some(format!(
            "must be at most {MAX_TOPIC_LENGTH} bytes (got {})",
            value.len()
        ));
    }
    let segments: Vec<&str> = value.split('.').collect();
    if segments.len() > MAX_TOPIC_SEGMENTS {
        return Some(format!(
            "must have at most {MAX_TOPIC_SEGMENTS} dot-separated segments (got {})",
            segments.len()
        ));
    }
    let last = segments.len() - 1;
    for (i, segment) in segments.iter().enumerate() {
        let n = i + 1;
        match *segment {
            "" => {
                return Some(format!(
                    "segment {n} is empty (a leading, trailing or double dot)"
                ));
            }
            "*" | ">" if !wildcards => {
                return Some(format!(
                    "segment {n} is the wildcard `{segment}`: a topic published on must be concrete \
                     (wildcards are for subscriptions)"
                ));
            }
            "*" => {}
            ">" if i != last => {
                return Some(format!(
                    "segment {n} is `>`, which may only be the last segment"
                ));
            }
            ">" => {}
            s => {
                if let Some(c) = s.chars().find(|&c| !segment_char(c)) {
                    return Some(format!(
                        "segment {n} (`{s}`) holds `{c}`: segments are made of A-Z, a-z, 0-9, \
                         `_`, `:`, `%` and `-` (percent-encode anything else)"
                    ));
                }
            }
        }
    }
    None
}

/// Checks a concrete topic (what is published on), as upstream's scripts do.
///
/// ```
/// use bullmq_core::relay::check_topic;
///
/// assert!(check_topic("queues.emails.jobs.42.progress").is_ok());
/// let err = check_topic("queues..jobs").unwrap_err();
/// assert_eq!(err.problems()[0].message, "segment 2 is empty (a leading, trailing or double dot)");
/// ```
///
/// # Errors
///
/// A [`ValidationError`] on `topic` naming the fault.
pub fn check_topic(topic: &str) -> Result<(), ValidationError> {
    fault(topic, false).map_or(Ok(()), |problem| {
        Err(ValidationError::single("relay topic", "topic", problem))
    })
}

/// Checks a subscription pattern: a topic that may hold `*` and a final `>`.
///
/// ```
/// use bullmq_core::relay::check_pattern;
///
/// assert!(check_pattern("queues.*.jobs.>").is_ok());
/// assert!(check_pattern("queues.>.jobs").is_err());
/// ```
///
/// # Errors
///
/// A [`ValidationError`] on `pattern` naming the fault.
pub fn check_pattern(pattern: &str) -> Result<(), ValidationError> {
    fault(pattern, true).map_or(Ok(()), |problem| {
        Err(ValidationError::single("relay pattern", "pattern", problem))
    })
}

/// True when `pattern` holds a wildcard (`*` or `>`): such a subscription never receives a
/// retained message.
#[must_use]
pub fn has_wildcards(pattern: &str) -> bool {
    pattern.split('.').any(|s| s == "*" || s == ">")
}

/// True when `topic` matches `pattern`, as the stores route it (for tests and tools: the relay
/// itself never matches, the store does).
#[must_use]
pub fn matches(pattern: &str, topic: &str) -> bool {
    let topic: Vec<&str> = topic.split('.').collect();
    let pattern: Vec<&str> = pattern.split('.').collect();
    for (i, segment) in pattern.iter().enumerate() {
        if *segment == ">" {
            return topic.len() > i;
        }
        match topic.get(i) {
            None => return false,
            Some(t) if *segment != "*" && segment != t => return false,
            Some(_) => {}
        }
    }
    pattern.len() == topic.len()
}

/// Why `id` is not a valid relay id; `None` when it is.
pub(crate) fn id_fault(id: &str) -> Option<String> {
    if id.is_empty() || id.len() > MAX_ID_LENGTH {
        return Some(format!(
            "must be 1 to {MAX_ID_LENGTH} characters (got {})",
            id.len()
        ));
    }
    id.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        .map(|c| format!("holds `{c}`: ids are made of A-Z, a-z, 0-9, `_` and `-`"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn topic_fault(t: &str) -> String {
        check_topic(t).unwrap_err().problems()[0].message.clone()
    }

    #[test]
    fn topics_follow_upstreams_grammar() {
        for ok in [
            "a",
            "queues.emails.jobs.42.progress",
            "a:b.c%20d.e-f_g",
            "A.B",
        ] {
            assert!(check_topic(ok).is_ok(), "{ok}");
        }
        assert_eq!(topic_fault(""), "must not be empty");
        assert!(topic_fault(".a").starts_with("segment 1 is empty"));
        assert!(topic_fault("a.").starts_with("segment 2 is empty"));
        assert!(topic_fault("a.b c").contains("holds ` `"));
        assert!(topic_fault("a.*").contains("wildcard `*`"));
        assert!(topic_fault("a.>").contains("wildcard `>`"));
        assert!(topic_fault("é").contains("holds `é`"));
        let long = "a".repeat(513);
        assert!(topic_fault(&long).contains("at most 512 bytes (got 513)"));
        assert!(check_topic(&"a".repeat(512)).is_ok());
        let deep = vec!["a"; 17].join(".");
        assert!(topic_fault(&deep).contains("at most 16"));
        assert!(check_topic(&vec!["a"; 16].join(".")).is_ok());
    }

    #[test]
    fn patterns_allow_star_anywhere_and_gt_last() {
        for ok in ["*", ">", "a.*", "*.b.>", "a.b.>", "*.*"] {
            assert!(check_pattern(ok).is_ok(), "{ok}");
        }
        let fault = check_pattern("a.>.b").unwrap_err();
        assert_eq!(fault.problems()[0].path, "pattern");
        assert!(fault.problems()[0].message.contains("may only be the last"));
        assert!(check_pattern("a.b*").is_err());
        assert!(check_pattern("a..>").is_err());
    }

    #[test]
    fn matching_is_upstreams() {
        assert!(matches("a.*.c", "a.b.c"));
        assert!(!matches("a.*.c", "a.b.c.d"));
        assert!(!matches("a.*", "a"));
        assert!(matches("a.>", "a.b"));
        assert!(matches("a.>", "a.b.c"));
        assert!(!matches("a.>", "a"));
        assert!(matches(">", "a"));
        assert!(matches("a.b", "a.b"));
        assert!(!matches("a.b", "a.c"));
        assert!(has_wildcards("a.*") && has_wildcards("a.>") && !has_wildcards("a.b"));
    }

    #[test]
    fn ids_are_short_and_plain() {
        assert!(id_fault("node-1_A").is_none());
        assert!(id_fault("").is_some());
        assert!(id_fault(&"a".repeat(65)).is_some());
        assert!(id_fault("a.b").unwrap().contains("holds `.`"));
    }
}
