//! Build-time access to the Lua scripts and SQL of the pinned `bullmq` npm package.
//!
//! The Redis and PostgreSQL backends run upstream's own Lua scripts and SQL,
//! byte for byte, so that they interoperate with the Node.js library. Their
//! build scripts call [`load`], which gets that text from one of two places:
//!
//! - **A packaged crate** (from crates.io, a vendor directory, `cargo package`)
//!   carries it in `generated/`, written from the pinned tarball when the crate
//!   was packaged (`cargo xtask package`), with upstream's license notice
//!   beside it. Nothing is downloaded and nothing is written: no Node.js, no
//!   network.
//! - **The bullmq-rs repository** never holds that text. There [`obtain`]
//!   fetches the pinned tarball ([`PACKAGE`]@[`VERSION`]) with the ordinary
//!   `npm` client (or takes it from [`TARBALL_ENV`]), checks it against
//!   [`TARBALL_SHA256`] and unpacks it into the git-ignored `.upstream/` cache of
//!   the workspace ([`CACHE_ENV`] moves it); the text is extracted from there.
//!
//! Either way the text is checked against the digests committed in
//! `checksums.txt` (SHA-1 of every Lua script, as Redis names it; SHA-256 of
//! every other file) before a build script embeds it.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

mod error;
mod fetch;
mod generated;
pub mod lua;
pub mod sql;

pub use error::{IncludeError, UpstreamError};
pub use generated::{GeneratedFile, Sources, render_checksums, verify, write_files};
pub use lua::LuaScript;
pub use sql::{MigrationFile, SqlFile};

/// The pin, as literals, so that the constants below can be built with `concat!`.
macro_rules! pinned {
    (package) => {
        "bullmq"
    };
    (version) => {
        "6.7.6"
    };
}

/// The npm package the Lua scripts and SQL come from.
pub const PACKAGE: &str = pinned!(package);

/// The pinned version of [`PACKAGE`].
pub const VERSION: &str = pinned!(version);

/// SHA-256 (lowercase hex) of the tarball `npm pack bullmq@6.7.6` produces,
/// i.e. of the file the npm registry serves for that version.
pub const TARBALL_SHA256: &str = "445f9f1d47fd6d809b9e124befda7d5e6e5d11e293fde21385db654aa51f4eb7";

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

/// Name of the directory, inside a packaged `bullmq-upstream`, that holds the
/// generated upstream text.
pub const GENERATED_DIR_NAME: &str = "generated";

/// This crate's own directory (in the repository, a registry or a vendor directory).
fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The root of the bullmq-rs workspace when this crate is built from the
/// repository (a checkout or a git dependency), `None` when it is built from a
/// package.
#[must_use]
pub fn workspace_root() -> Option<PathBuf> {
    let root = crate_dir().parent()?;
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).ok()?;
    (manifest.contains("[workspace]") && manifest.contains("\"bullmq-upstream\""))
        .then(|| root.to_path_buf())
}

/// The verified text the backends embed, and what a build script should watch.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The scripts, commands and migrations.
    pub sources: Sources,
    /// The unpacked tarball, in the repository only (tests read it).
    pub package: Option<Package>,
    /// Files whose change should make cargo run the build script again.
    pub rerun_if_changed: Vec<PathBuf>,
}

/// Loads the upstream text for a build script, verified against the committed
/// digests: from the packaged `generated/` directory, or in the repository
/// from the pinned tarball (see the crate docs).
///
/// Outside the repository nothing is written and no program is run.
///
/// # Errors
///
/// Everything [`obtain`] returns (repository), a missing or altered
/// `generated/` directory (package), and text that does not match the
/// committed digests.
pub fn load() -> Result<Loaded, UpstreamError> {
    let Some(root) = workspace_root() else {
        let dir = crate_dir().join(GENERATED_DIR_NAME);
        if !dir.is_dir() {
            return Err(error::layout_error(
                &dir,
                "this copy of bullmq-upstream carries no generated upstream text: it was \
                 packaged without `cargo xtask package`. Use a release from crates.io, or build \
                 inside the bullmq-rs repository",
            ));
        }
        let sources = generated::load_packaged(&dir)?;
        return Ok(Loaded {
            sources,
            package: None,
            rerun_if_changed: vec![dir],
        });
    };
    let package = obtain(&cache_dir(&root))?;
    let sources = Sources::from_package(&package)?;
    verify(&sources.files(&package.license()?))?;
    Ok(Loaded {
        sources,
        rerun_if_changed: vec![package.verification_marker()],
        package: Some(package),
    })
}

/// [`load`] for a build script: also prints the cargo directives that go with it (run again
/// when [`TARBALL_ENV`], [`CACHE_ENV`] or the text's source change; in the repository,
/// `BULLMQ_UPSTREAM_PACKAGE_DIR` for the tests that compare the embedded text with the package).
///
/// # Errors
///
/// See [`load`].
pub fn load_for_build_script() -> Result<Sources, UpstreamError> {
    println!("cargo:rerun-if-env-changed={TARBALL_ENV}");
    println!("cargo:rerun-if-env-changed={CACHE_ENV}");
    let loaded = load()?;
    for path in &loaded.rerun_if_changed {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    if let Some(package) = &loaded.package {
        println!(
            "cargo:rustc-env=BULLMQ_UPSTREAM_PACKAGE_DIR={}",
            package.root().display()
        );
    }
    Ok(loaded.sources)
}

/// Makes the pinned package available under `cache_dir` and returns it.
///
/// 1. If the cache already holds an unpacked copy marked as verified, that copy
///    is used.
/// 2. Otherwise the tarball is taken from [`TARBALL_ENV`] if set, else from
///    `<cache_dir>/bullmq-6.7.6.tgz` if present, else it is downloaded with
///    `npm pack bullmq@6.7.6` into the cache. Its SHA-256 must equal
///    [`TARBALL_SHA256`]. It is then unpacked into `<cache_dir>/bullmq-6.7.6/`
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
    /// `<cache>/bullmq-6.7.6`, holding `package/` and the verification marker.
    unpacked: PathBuf,
    /// `<cache>/bullmq-6.7.6/package`.
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

    /// Upstream's license notice (`LICENSE` of the package).
    ///
    /// # Errors
    ///
    /// The file cannot be read.
    pub fn license(&self) -> Result<String, UpstreamError> {
        let path = self.root.join("LICENSE");
        std::fs::read_to_string(&path).map_err(|e| error::io_error("read", path, e))
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

/// The constant names one generated module declares, each claimed once: a build script asks
/// for the name of every upstream file and stops on the first it cannot use.
///
/// ```
/// let mut names = bullmq_upstream::ConstNames::default();
/// assert_eq!(names.claim("addStandardJob").as_deref(), Ok("ADD_STANDARD_JOB"));
/// assert!(names.claim("add_standard_job").is_err(), "taken");
/// assert!(names.claim("all").is_err(), "`ALL` lists the module's constants");
/// ```
#[derive(Debug, Default)]
pub struct ConstNames {
    taken: std::collections::HashSet<String>,
}

impl ConstNames {
    /// The constant for upstream `name` ([`const_name`]).
    ///
    /// # Errors
    ///
    /// A sentence saying why when `name` has no Rust name, maps to `ALL` (the list each
    /// generated module ends with) or to a name an earlier file took.
    pub fn claim(&mut self, name: &str) -> Result<String, String> {
        let ident = const_name(name)
            .filter(|ident| ident != "ALL")
            .ok_or_else(|| format!("{name:?} has no usable Rust name"))?;
        if !self.taken.insert(ident.clone()) {
            return Err(format!("{name:?} maps to {ident}, which another file took"));
        }
        Ok(ident)
    }
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
