//! [`DashboardError`]: what a page or an action answers when it cannot do what was asked.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::csrf::CsrfRefusal;

/// Why a request was refused or failed; each becomes a page with its status code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DashboardError {
    /// No such connection, queue, job or page, or one the request may not see (the
    /// authorization hook answered `Access::None`): 404, so nothing hidden is revealed.
    #[error("not found")]
    NotFound,
    /// A mutating endpoint on a queue the request may only read: 403.
    #[error(
        "read-only: you may not change queue {queue:?} of connection {connection:?} (ask for full access, or turn read-only mode off)"
    )]
    ReadOnly {
        /// The connection's name.
        connection: String,
        /// The queue.
        queue: String,
    },
    /// The action's CSRF check failed: 403.
    #[error("refused: {0}")]
    Csrf(#[from] CsrfRefusal),
    /// Bad input: 400, naming the field, the cause and the fix.
    #[error("invalid `{field}`: {cause}; {fix}")]
    BadInput {
        /// The query parameter, form field or path part.
        field: &'static str,
        /// What is wrong with it.
        cause: String,
        /// What to send instead.
        fix: &'static str,
    },
    /// The connection could not be made: 502.
    #[error("connection {connection:?} is unavailable: {cause}")]
    Connect {
        /// The connection's name.
        connection: String,
        /// Why (never a password).
        cause: String,
    },
    /// The store failed or refused: 502, or 409 when it refused the operation itself.
    #[error("the store answered: {0}")]
    Store(#[from] bullmq::Error),
    /// The store failed a search query (PostgreSQL's jsonb search): 502.
    #[error("the search query failed: {0}")]
    Search(String),
    /// The system gave no random bytes for a CSRF nonce: 500.
    #[error("no randomness for a CSRF nonce (getrandom failed)")]
    NoRandomness,
}

impl DashboardError {
    /// The HTTP status the error answers with.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::ReadOnly { .. } | Self::Csrf(_) => StatusCode::FORBIDDEN,
            Self::BadInput { .. } => StatusCode::BAD_REQUEST,
            Self::Connect { .. } => StatusCode::BAD_GATEWAY,
            Self::Store(e) if e.backend_kind().is_none() => StatusCode::CONFLICT,
            Self::Store(_) | Self::Search(_) => StatusCode::BAD_GATEWAY,
            Self::NoRandomness => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// A 400 for `field`.
    pub(crate) fn bad(field: &'static str, cause: impl Into<String>, fix: &'static str) -> Self {
        Self::BadInput {
            field,
            cause: cause.into(),
            fix,
        }
    }
}

impl IntoResponse for DashboardError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() || status == StatusCode::BAD_GATEWAY {
            tracing::warn!(target: "bullmq_dashboard", status = status.as_u16(), error = %self, "request failed");
        }
        let message = self.to_string();
        let page = maud::html! {
            (maud::DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (status.as_u16()) " · bullmq dashboard" }
                }
                body {
                    main {
                        h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
                        p.error { (message) }
                    }
                }
            }
        };
        (status, axum::response::Html(page.into_string())).into_response()
    }
}
