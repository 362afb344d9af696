//! What a request may do on one queue: the authorization hook's answer.

use axum::http::request::Parts;
use bullmq::QueueName;

/// What the authorization hook grants a request on one queue of one connection.
///
/// ```
/// use bullmq_dashboard::Access;
///
/// // A read-only dashboard caps every answer at `ReadOnly`.
/// assert_eq!(Access::Full.min(Access::ReadOnly), Access::ReadOnly);
/// assert!(!Access::None.can_read());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// Nothing: the queue is not shown, and its pages answer 404.
    None,
    /// Every page, and no action: every mutating endpoint answers 403.
    ReadOnly,
    /// Every page and every action.
    Full,
}

impl Access {
    /// Whether pages of the queue may be read.
    #[must_use]
    pub fn can_read(self) -> bool {
        self >= Self::ReadOnly
    }

    /// Whether actions on the queue may run.
    #[must_use]
    pub fn can_act(self) -> bool {
        self == Self::Full
    }
}

/// The hook: the request's head, the connection's name, the queue.
pub(crate) type AuthorizeFn = dyn Fn(&Parts, &str, &QueueName) -> Access + Send + Sync + 'static;
