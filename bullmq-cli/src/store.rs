//! The store a command talks to: its URL (from the flags or the environment), the prefix or
//! schema, and the text that names it in messages (never with a password).

use bullmq::backend::Lifecycle as _;
use bullmq::{AnyBackend, ConnectError, ConnectOptions, Prefix, Queue, QueueName};

use crate::cli::Cli;
use crate::fail::{Failure, cause, fix_for};

/// The environment variables read for the URL when --url is not given, in order.
const URL_VARS: [&str; 3] = ["BULLMQ_URL", "REDIS_URL", "DATABASE_URL"];

/// The URL the command line names: --url, else the first variable of [`URL_VARS`] set.
pub(crate) fn url_of(cli: &Cli) -> Option<String> {
    cli.url.clone().or_else(|| {
        URL_VARS
            .iter()
            .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
    })
}

/// `text` with the password of `url` (if any) replaced by `***`.
pub(crate) fn scrub(text: &str, url: Option<&str>) -> String {
    let Some(password) = url.and_then(password_of) else {
        return text.to_owned();
    };
    if password.len() < 2 {
        return text.to_owned();
    }
    text.replace(password, "***")
}

/// The password in a URL's user information (`scheme://user:password@host`).
fn password_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = &rest[..rest.rfind('@')?];
    authority
        .split_once(':')
        .map(|(_, p)| p)
        .filter(|p| !p.is_empty())
}

/// Where the queues are: a connection's settings and how to name it.
pub(crate) struct Store {
    options: ConnectOptions,
    /// The URL as given (with its password: never printed).
    url: String,
    prefix: Option<String>,
    schema: Option<String>,
    /// The URL without its password.
    shown: String,
    /// The prefix or schema asked for, shown in messages.
    namespace: Option<String>,
}

impl Store {
    /// The store the command line names; a usage failure when it names none.
    pub(crate) fn from_cli(cli: &Cli) -> Result<Self, Failure> {
        let url = url_of(cli).ok_or_else(|| {
            Failure::usage(
                "no store to talk to: neither --url nor BULLMQ_URL, REDIS_URL or DATABASE_URL is \
                 set; pass --url redis://host:6379 or --url postgres://user@host/db",
            )
        })?;
        let shown = bullmq::redact_url(&url);
        let scheme = url
            .split_once("://")
            .map_or("", |(s, _)| s)
            .to_ascii_lowercase();
        let is_redis = scheme.starts_with("redis") || scheme == "unix";
        let mut options = ConnectOptions::new(url.clone());
        let mut namespace = None;
        if let Some(prefix) = &cli.prefix {
            let prefix = Prefix::new(prefix.clone()).map_err(|e| {
                Failure::usage(format!("--prefix is invalid: {e}; pass a prefix without control characters, e.g. --prefix bull"))
            })?;
            if is_redis {
                namespace = Some(format!("prefix {prefix}"));
            }
            options = options.prefix(prefix);
        }
        if let Some(schema) = &cli.schema {
            if !is_redis {
                namespace = Some(format!("schema {schema}"));
            }
            options = options.schema(schema.clone());
        }
        Ok(Self {
            options,
            url,
            prefix: cli.prefix.clone(),
            schema: cli.schema.clone(),
            shown,
            namespace,
        })
    }

    /// The store, named for a message: `redis://host:6379 (prefix p)`.
    pub(crate) fn target(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} ({ns})", self.shown),
            None => self.shown.clone(),
        }
    }

    /// The URL as given, password included: for connecting, never for printing.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// `--prefix`, when given.
    pub(crate) fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// `--schema`, when given.
    pub(crate) fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// A backend for `queue`, or the library's own error.
    pub(crate) async fn connect(&self, queue: &str) -> Result<AnyBackend, ConnectError> {
        self.options.connect(queue).await
    }

    /// A backend for `queue`, connected.
    pub(crate) async fn backend(&self, queue: &str) -> Result<AnyBackend, Failure> {
        queue_name(queue)?;
        self.connect(queue).await.map_err(|e| match e {
            ConnectError::UnknownScheme { .. } | ConnectError::FeatureNotCompiled { .. } => {
                Failure::usage(format!("cannot use the store {}: {e}", self.shown))
            }
            ConnectError::Invalid(e) => Failure::usage(format!(
                "cannot use the store {}: {e}; check --schema and the queue name",
                self.target()
            )),
            // Settings the library refuses before talking to the server (a Cluster prefix
            // without a hash tag, a bad URL): the command line's to fix.
            ConnectError::Backend(e @ bullmq::Error::Invalid(_)) => Failure::usage(format!(
                "cannot use the store {}: {}",
                self.target(),
                cause(&e)
            )),
            ConnectError::Backend(e) => Failure::failed(format!(
                "cannot connect to {}: {}; {}",
                self.target(),
                cause(&e),
                fix_for(&e)
            )),
            other => Failure::failed(format!("cannot connect to {}: {other}", self.target())),
        })
    }

    /// A queue named `queue`, connected.
    pub(crate) async fn queue(&self, queue: &str) -> Result<Queue<AnyBackend>, Failure> {
        let backend = self.backend(queue).await?;
        let name = queue_name(queue)?;
        Queue::try_new(name, backend).map_err(|e| self.error("open", queue, &e))
    }

    /// What a failed call of `action` on `queue` says: the target, the cause, the fix.
    pub(crate) fn error(&self, action: &str, queue: &str, err: &bullmq::Error) -> Failure {
        Failure::failed(format!(
            "cannot {action} queue {queue:?} on {}: {}; {}",
            self.target(),
            cause(err),
            fix_for(err)
        ))
    }
}

/// A queue named `name` on the connections of `backend`.
pub(crate) fn queue_on(backend: &AnyBackend, name: QueueName) -> Queue<AnyBackend> {
    let sibling = backend.for_queue(&name, None);
    // A sibling is bound to `name` by construction, so `try_new`'s check cannot fail.
    #[allow(deprecated)]
    Queue::new(name, sibling)
}

/// `queue` as a queue name, or a usage failure that says why not.
pub(crate) fn queue_name(queue: &str) -> Result<QueueName, Failure> {
    QueueName::new(queue).map_err(|e| {
        Failure::usage(format!(
            "the queue name {queue:?} is invalid: {e}; pass a name without ':' or control characters"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_scrubbed_from_any_text() {
        let url = "redis://user:s3cret@127.0.0.1:1/0";
        assert_eq!(password_of(url), Some("s3cret"));
        assert_eq!(scrub("x s3cret y", Some(url)), "x *** y");
        assert_eq!(password_of("redis://127.0.0.1"), None);
        assert_eq!(password_of("postgres://u@h/db"), None);
    }
}
