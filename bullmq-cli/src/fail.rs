//! A command's failure: its exit code and the one sentence that explains it.

/// Exit code of a command that could not do what it was asked.
pub(crate) const FAILED: u8 = 1;
/// Exit code of a command line that asks for something this tool refuses or cannot read.
pub(crate) const USAGE: u8 = 2;

/// Why a command stopped: printed as `error: <message>` on stderr, exiting with `code`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    /// The command ran and failed (exit code 1).
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            code: FAILED,
            message: message.into(),
        }
    }

    /// The command line asks for something refused or invalid (exit code 2).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: USAGE,
            message: message.into(),
        }
    }
}

/// An error's text as the middle of a sentence: without the full stop it may end with.
pub(crate) fn cause(err: &(impl std::fmt::Display + ?Sized)) -> String {
    err.to_string().trim_end().trim_end_matches('.').to_owned()
}

/// `n` and `word`, plural unless `n` is 1 (`1 batch`, `3 batches`).
pub(crate) fn count_of(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What to do about a store error, by its kind.
pub(crate) fn fix_for(err: &bullmq::Error) -> &'static str {
    use bullmq::BackendErrorKind as K;
    match err.backend_kind() {
        Some(K::Connection) => {
            "check that the server is running and reachable, and that --url (or BULLMQ_URL) names it"
        }
        Some(K::Timeout) => "check the server's load and the network, then run the command again",
        Some(K::Schema) => {
            "check --schema, or migrate the schema with a bullmq application (ConnectOptions::migrate)"
        }
        Some(K::Server) => "check the user's permissions (ACL or grants) and the server's logs",
        _ => "check the queue name, --prefix / --schema and the server's logs",
    }
}
