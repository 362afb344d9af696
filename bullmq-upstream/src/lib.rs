//! Build-time access to the pinned `bullmq` npm package.
//!
//! The Redis and Postgres backends run upstream's own Lua scripts and SQL,
//! byte for byte, so that they interoperate with the Node.js library. None of that
//! text lives in this repository: the build scripts of `bullmq-redis` and
//! `bullmq-postgres` call [`obtain`], which fetches the pinned tarball
//! ([`PACKAGE`]@[`VERSION`]) with the ordinary `npm` client, checks it against
//! [`TARBALL_SHA256`] and unpacks it into a cache directory; then
//! [`Package::lua_scripts`], [`Package::sql_commands`] and
//! [`Package::sql_migrations`] extract what the backends embed.
//!
//! Offline builds set [`TARBALL_ENV`] to a tarball obtained elsewhere with
//! `npm pack bullmq@6.7.0`; [`CACHE_ENV`] moves the cache.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

mod error;
mod fetch;
pub mod lua;
pub mod sql;

pub use error::{IncludeError, UpstreamError};
pub use lua::LuaScript;
pub use sql::{MigrationFile, SqlFile};

/// The pin, as literals, so that the constants below can be built with `concat!`.
macro_rules! pinned {
    (package) => {
        "bullmq"
    };
    (version) => {
        "6.7.0"
    };
}

/// The npm package the Lua scripts and SQL come from.
pub const PACKAGE: &str = pinned!(package);

/// The pinned version of [`PACKAGE`].
pub const VERSION: &str = pinned!(version);

/// SHA-256 (lowercase hex) of the tarball `npm pack bullmq@6.7.0` produces,
/// i.e. of the file the npm registry serves for that version.
pub const TARBALL_SHA256: &str = "1b9e166ff4c77ecbb75c15f0e2afc3bdce7aaf3789f4701b45ed0483dcbadb04";

/// File name of the pinned tarball, as written by `npm pack`.
pub const TARBALL_FILE_NAME: &str = concat!(pinned!(package), "-", pinned!(version), ".tgz");

/// Environment variable naming a local copy of the pinned tarball; when set,
/// [`obtain`] uses that file (after checking its SHA-256) and never runs npm.
pub const TARBALL_ENV: &str = "BULLMQ_UPSTREAM_TARBALL";

/// Environment variable overriding the cache directory (see [`cache_dir`]).
pub const CACHE_ENV: &str = "BULLMQ_UPSTREAM_CACHE";

/// Name of the directory, inside the cache, the tarball is unpacked into.
const UNPACKED_DIR_NAME: &str = concat!(pinned!(package), "-", pinned!(version));

/// The cache directory for a build in the workspace rooted at `workspace_root`:
/// the value of [`CACHE_ENV`] when set (a relative value is taken relative to
/// `workspace_root`), else `<workspace_root>/.upstream`.
#[must_use]
pub fn cache_dir(workspace_root: &Path) -> PathBuf {
    match std::env::var_os(CACHE_ENV) {
        Some(value) if !value.is_empty() => workspace_root.join(value),
        _ => workspace_root.join(".upstream"),
    }
}

/// Makes the pinned package available under `cache_dir` and returns it.
///
/// 1. If the cache already holds an unpacked copy marked as verified, that copy
///    is used.
/// 2. Otherwise the tarball is taken from [`TARBALL_ENV`] if set, else from
///    `<cache_dir>/bullmq-6.7.0.tgz` if present, else it is downloaded with
///    `npm pack bullmq@6.7.0` into the cache. Its SHA-256 must equal
///    [`TARBALL_SHA256`]. It is then unpacked into `<cache_dir>/bullmq-6.7.0/`
///    and marked as verified.
///
/// A tarball named by [`TARBALL_ENV`] is checked on every call. Downloads and
/// unpacks go through temporary directories renamed into place, so concurrent
/// callers sharing a cache do not disturb each other.
///
/// # Errors
///
/// [`UpstreamError::NpmNotFound`] / [`UpstreamError::NpmFailed`] when a
/// download is needed and npm is missing or fails (the message explains the
/// offline alternative), [`UpstreamError::ChecksumMismatch`] for a tarball
/// that is not the pinned one, and file-system errors.
pub fn obtain(cache_dir: &Path) -> Result<Package, UpstreamError> {
    fetch::obtain(cache_dir)
}

/// The unpacked, verified package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    /// `<cache>/bullmq-6.7.0`, holding `package/` and the verification marker.
    unpacked: PathBuf,
    /// `<cache>/bullmq-6.7.0/package`.
    root: PathBuf,
}

impl Package {
    fn new(unpacked: PathBuf) -> Self {
        let root = unpacked.join("package");
        Self { unpacked, root }
    }

    /// The package directory (the one holding `package.json` and `dist/`).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file whose presence marks the unpacked copy as verified. Build
    /// scripts can pass it to `cargo:rerun-if-changed` so that deleting the
    /// cache triggers a new extraction.
    #[must_use]
    pub fn verification_marker(&self) -> PathBuf {
        self.unpacked.join(fetch::MARKER_FILE_NAME)
    }

    /// `dist/cjs/commands`: the top-level Lua scripts, with `includes/` below.
    #[must_use]
    pub fn lua_commands_dir(&self) -> PathBuf {
        self.root.join("dist/cjs/commands")
    }

    /// `dist/cjs/postgres/sql-scripts.js`: every SQL file, inlined.
    #[must_use]
    pub fn sql_scripts_js(&self) -> PathBuf {
        self.root.join("dist/cjs/postgres/sql-scripts.js")
    }

    /// `dist/cjs/postgres/migrations/index.js`: the migration ledger.
    #[must_use]
    pub fn migrations_index_js(&self) -> PathBuf {
        self.root.join("dist/cjs/postgres/migrations/index.js")
    }

    /// Every top-level Lua script with its includes resolved, ordered by file name.
    ///
    /// # Errors
    ///
    /// See [`lua::load_scripts`].
    pub fn lua_scripts(&self) -> Result<Vec<LuaScript>, UpstreamError> {
        lua::load_scripts(&self.lua_commands_dir())
    }

    /// Every SQL command, ordered by name.
    ///
    /// # Errors
    ///
    /// See [`sql::load_commands`].
    pub fn sql_commands(&self) -> Result<Vec<SqlFile>, UpstreamError> {
        sql::load_commands(&self.sql_scripts_js())
    }

    /// Every migration, ordered by version.
    ///
    /// # Errors
    ///
    /// See [`sql::load_migrations`].
    pub fn sql_migrations(&self) -> Result<Vec<MigrationFile>, UpstreamError> {
        sql::load_migrations(&self.sql_scripts_js(), &self.migrations_index_js())
    }
}

/// The Rust constant name for an upstream name: `addStandardJob` →
/// `ADD_STANDARD_JOB`, `getStateV2` → `GET_STATE_V2`, `add_job` → `ADD_JOB`.
///
/// Returns `None` when the result would not be a plain Rust identifier.
#[must_use]
pub fn const_name(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev_lower_or_digit = false;
    for c in name.chars() {
        if !(c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        if c.is_ascii_uppercase() && prev_lower_or_digit {
            out.push('_');
        }
        prev_lower_or_digit = c.is_ascii_lowercase() || c.is_ascii_digit();
        out.push(c.to_ascii_uppercase());
    }
    let starts_ok = out.starts_with(|c: char| c.is_ascii_alphabetic());
    starts_ok.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_names_agree() {
        assert_eq!(TARBALL_FILE_NAME, format!("{PACKAGE}-{VERSION}.tgz"));
        assert_eq!(UNPACKED_DIR_NAME, format!("{PACKAGE}-{VERSION}"));
        assert_eq!(TARBALL_SHA256.len(), 64);
    }

    #[test]
    fn const_names() {
        let c = |s: &str| const_name(s);
        assert_eq!(c("addStandardJob").as_deref(), Some("ADD_STANDARD_JOB"));
        assert_eq!(c("moveToFinished").as_deref(), Some("MOVE_TO_FINISHED"));
        assert_eq!(c("getStateV2").as_deref(), Some("GET_STATE_V2"));
        assert_eq!(c("add_job").as_deref(), Some("ADD_JOB"));
        assert_eq!(c("0001_schema"), None);
        assert_eq!(c("a-b"), None);
    }
}
