//! The error type of this crate.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::{PACKAGE, TARBALL_ENV, TARBALL_FILE_NAME, VERSION};

/// Everything that can go wrong while obtaining the pinned package or reading
/// its Lua scripts and SQL.
///
/// The `Display` text is meant to be shown as is by a failing build script, so
/// every message says what failed, on which file, and what to do about it.
#[derive(Debug)]
#[non_exhaustive]
pub enum UpstreamError {
    /// A file-system operation failed.
    Io {
        /// What was being done, e.g. "read" or "create directory".
        action: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// `npm` could not be started, and `BULLMQ_UPSTREAM_TARBALL` is not set.
    NpmNotFound {
        /// The error returned when spawning `npm`.
        source: io::Error,
    },
    /// `npm pack` ran but did not succeed.
    NpmFailed {
        /// How the process ended (exit status).
        status: String,
        /// What npm printed on standard error.
        stderr: String,
    },
    /// A tarball does not have the pinned SHA-256.
    ChecksumMismatch {
        /// The tarball that was checked.
        path: PathBuf,
        /// The pinned digest ([`crate::TARBALL_SHA256`]).
        expected: &'static str,
        /// The digest of the file, lowercase hex.
        actual: String,
    },
    /// Extracted or packaged text does not match the committed digests
    /// (`bullmq-upstream/checksums.txt`).
    Digest {
        /// The file, relative to the generated directory (or `checksums.txt` itself).
        file: String,
        /// What differs, and what to do.
        message: String,
    },
    /// A `--- @include` directive could not be resolved.
    Include(IncludeError),
    /// A file of the package does not have the shape this crate expects
    /// (which usually means the pin was bumped and the parser needs a look).
    Layout {
        /// The file that could not be understood.
        path: PathBuf,
        /// What was expected and not found.
        message: String,
    },
}

/// Why a `--- @include` directive of a Lua script could not be resolved.
///
/// These are the errors upstream's script loader raises too, plus
/// [`IncludeError::Unsupported`] for loader features the package does not use.
#[derive(Debug)]
#[non_exhaustive]
pub enum IncludeError {
    /// The included file does not exist (or is not a `.lua` file).
    NotFound {
        /// The file containing the directive.
        file: PathBuf,
        /// The directive as written.
        directive: String,
        /// The path the directive resolved to.
        resolved: PathBuf,
    },
    /// The same file is included twice by one file.
    Duplicate {
        /// The file containing both directives.
        file: PathBuf,
        /// The second directive, as written.
        directive: String,
    },
    /// Following the includes leads back to a file being resolved.
    Cycle {
        /// The file reached a second time.
        path: PathBuf,
        /// The include chain, outermost first.
        chain: Vec<PathBuf>,
    },
    /// The directive uses a feature of upstream's loader (glob patterns,
    /// `~` or `<mapping>` paths) that this resolver does not implement.
    Unsupported {
        /// The file containing the directive.
        file: PathBuf,
        /// The directive as written.
        directive: String,
        /// Which feature it uses.
        feature: &'static str,
    },
}

impl fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io {
                action,
                path,
                source,
            } => write!(f, "failed to {action} {}: {source}", path.display()),
            Self::NpmNotFound { source } => write!(
                f,
                "could not run `npm` to download {PACKAGE}@{VERSION} ({source}). \
                 Either install Node.js (which provides npm) and build again, \
                 or run `npm pack {PACKAGE}@{VERSION}` on a machine that has npm, \
                 copy the resulting {TARBALL_FILE_NAME} here and build with \
                 {TARBALL_ENV}=/path/to/{TARBALL_FILE_NAME}"
            ),
            Self::NpmFailed { status, stderr } => write!(
                f,
                "`npm pack {PACKAGE}@{VERSION}` failed ({status}): {}. \
                 If this machine cannot reach the npm registry, run \
                 `npm pack {PACKAGE}@{VERSION}` elsewhere, copy {TARBALL_FILE_NAME} here \
                 and build with {TARBALL_ENV}=/path/to/{TARBALL_FILE_NAME}",
                stderr.trim()
            ),
            Self::ChecksumMismatch {
                path,
                expected,
                actual,
            } => write!(
                f,
                "sha256 mismatch for {}: expected {expected} (the pinned {PACKAGE}@{VERSION}), \
                 got {actual}. If this is a stale or truncated cache file, delete it and build \
                 again; if it came from {TARBALL_ENV}, point that variable at the genuine \
                 {TARBALL_FILE_NAME}",
                path.display()
            ),
            Self::Include(err) => write!(f, "{err}"),
            Self::Digest { file, message } => {
                write!(f, "upstream text {file} of {PACKAGE}@{VERSION}: {message}")
            }
            Self::Layout { path, message } => write!(
                f,
                "unexpected content in {} of {PACKAGE}@{VERSION}: {message}",
                path.display()
            ),
        }
    }
}

impl fmt::Display for IncludeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound {
                file,
                directive,
                resolved,
            } => write!(
                f,
                "{}: include not found: `{directive}` (looked for {})",
                file.display(),
                resolved.display()
            ),
            Self::Duplicate { file, directive } => write!(
                f,
                "{}: `{directive}` includes a file this file already includes",
                file.display()
            ),
            Self::Cycle { path, chain } => {
                write!(f, "circular include of {}; include chain:", path.display())?;
                for step in chain {
                    write!(f, " {} ->", step.display())?;
                }
                write!(f, " {}", path.display())
            }
            Self::Unsupported {
                file,
                directive,
                feature,
            } => write!(
                f,
                "{}: `{directive}` uses {feature}, which bullmq-upstream does not support",
                file.display()
            ),
        }
    }
}

impl std::error::Error for UpstreamError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } | Self::NpmNotFound { source } => Some(source),
            Self::Include(err) => Some(err),
            Self::NpmFailed { .. }
            | Self::ChecksumMismatch { .. }
            | Self::Digest { .. }
            | Self::Layout { .. } => None,
        }
    }
}

impl std::error::Error for IncludeError {}

impl From<IncludeError> for UpstreamError {
    fn from(err: IncludeError) -> Self {
        Self::Include(err)
    }
}

/// Shorthand for building an [`UpstreamError::Io`].
pub(crate) fn io_error(
    action: &'static str,
    path: impl Into<PathBuf>,
    source: io::Error,
) -> UpstreamError {
    UpstreamError::Io {
        action,
        path: path.into(),
        source,
    }
}

/// Shorthand for building an [`UpstreamError::Layout`].
pub(crate) fn layout_error(path: impl Into<PathBuf>, message: impl Into<String>) -> UpstreamError {
    UpstreamError::Layout {
        path: path.into(),
        message: message.into(),
    }
}
