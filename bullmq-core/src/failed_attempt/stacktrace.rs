//! The stack traces a job keeps across failed attempts (upstream: `Job#updateStacktrace`).

/// The stack traces Node.js stores after a failed attempt: the new one appended, then only the
/// newest `limit` kept (none at all when the limit is 0; every one when there is no limit).
/// Without a stack, nothing is appended and nothing trimmed.
#[must_use]
pub(crate) fn next_stacktrace(
    previous: &[String],
    stack: Option<&str>,
    limit: Option<u32>,
) -> Vec<String> {
    let Some(stack) = stack else {
        return previous.to_vec();
    };
    let mut traces = previous.to_vec();
    traces.push(stack.to_owned());
    match limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX)) {
        Some(0) => Vec::new(),
        Some(n) if traces.len() > n => traces.split_off(traces.len() - n),
        _ => traces,
    }
}

#[cfg(test)]
mod tests {
    use super::next_stacktrace;

    fn traces(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("s{i}")).collect()
    }

    #[test]
    fn stacktrace_is_trimmed_like_node() {
        assert_eq!(next_stacktrace(&traces(2), Some("new"), None).len(), 3);
        assert_eq!(
            next_stacktrace(&traces(3), Some("new"), Some(2)),
            vec!["s2".to_owned(), "new".to_owned()]
        );
        assert!(next_stacktrace(&traces(3), Some("new"), Some(0)).is_empty());
        // No stack: nothing appended and nothing trimmed, as upstream's `updateStacktrace`.
        assert_eq!(next_stacktrace(&traces(3), None, Some(1)), traces(3));
    }
}
