//! The error every rejected input gets: which value, which field, which rule.

use std::fmt;

/// One broken rule: the path of the field (`backoff.jitter`) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted path of the offending field, in the camelCase name Node.js BullMQ uses.
    pub path: String,
    /// What is wrong, including the bound that was broken and the value that broke it.
    pub message: String,
}

impl Problem {
    /// The rule `message` broken at `path`.
    ///
    /// ```
    /// let problem = bullmq_core::options::Problem::new("lockRenewTime", "must be greater than 0");
    /// assert_eq!(problem.path, "lockRenewTime");
    /// ```
    #[must_use]
    pub fn new(path: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            message: message.into(),
        }
    }
}

/// Input rejected before anything was written.
///
/// ```
/// use bullmq_core::JobOptions;
///
/// let err = JobOptions::new().priority(3_000_000).validate().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid job options: priority: must be between 0 and 2097151 (got 3000000)"
/// );
/// assert_eq!(err.problems()[0].path, "priority");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    subject: &'static str,
    problems: Vec<Problem>,
}

impl ValidationError {
    /// An error about one field of `subject` (`"job options"`, `"queue name"`).
    pub fn single(subject: &'static str, path: &str, message: impl Into<String>) -> Self {
        Self {
            subject,
            problems: vec![Problem::new(path, message)],
        }
    }

    /// What was being validated.
    #[must_use]
    pub fn subject(&self) -> &'static str {
        self.subject
    }

    /// Every broken rule: per-field rules in field order, then rules that span fields.
    #[must_use]
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Collects a garde report plus checks garde cannot express, or `Ok` when both are empty.
    pub(crate) fn check(
        subject: &'static str,
        report: Result<(), garde::Report>,
        extra: Vec<Problem>,
    ) -> Result<(), Self> {
        let mut problems: Vec<Problem> = match report {
            Ok(()) => Vec::new(),
            Err(report) => report
                .iter()
                .map(|(path, error)| Problem {
                    path: path.to_string(),
                    message: error.to_string(),
                })
                .collect(),
        };
        problems.extend(extra);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Self { subject, problems })
        }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: ", self.subject)?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{}: {}", p.path, p.message)?;
        }
        Ok(())
    }
}
