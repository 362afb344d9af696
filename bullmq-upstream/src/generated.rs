//! The upstream text as a set of files: written into a packaged crate at
//! packaging time, read back (and verified) when that crate is built.
//!
//! The set is a function of the pinned tarball: the resolved Lua scripts, the
//! SQL commands and migrations, the migration ledger as one line per
//! migration, and upstream's license notice. Its digests are committed in
//! `checksums.txt`; every build compares the text it embeds with them, whether
//! it came from the tarball (a build in the repository) or from the files a
//! packaged crate carries.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{UpstreamError, io_error, layout_error};
use crate::{LuaScript, MigrationFile, PACKAGE, Package, SqlFile, TARBALL_SHA256, VERSION};

/// The committed digests of every generated file (see the module docs).
const CHECKSUMS: &str = include_str!("../checksums.txt");

/// Path of `checksums.txt` in the repository, for messages.
const CHECKSUMS_PATH: &str = "bullmq-upstream/checksums.txt";

/// The ledger file: `<version> <name> <min_client_version>` per migration.
const LEDGER_FILE: &str = "sql/migrations.txt";

/// Upstream's license notice, carried beside its text.
const LICENSE_FILE: &str = "LICENSE";

/// Everything the backends embed, verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// Every top-level Lua script, ordered by file name.
    pub lua_scripts: Vec<LuaScript>,
    /// Every SQL command, ordered by name.
    pub sql_commands: Vec<SqlFile>,
    /// Every migration, ordered by version.
    pub sql_migrations: Vec<MigrationFile>,
}

/// One generated file: its path relative to the generated directory, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Relative path with `/` separators, e.g. `lua/addJob-9.lua`.
    pub path: String,
    /// The content.
    pub text: String,
}

impl Sources {
    /// Extracts everything from the unpacked tarball.
    ///
    /// # Errors
    ///
    /// See [`Package::lua_scripts`], [`Package::sql_commands`] and
    /// [`Package::sql_migrations`].
    pub fn from_package(package: &Package) -> Result<Self, UpstreamError> {
        Ok(Self {
            lua_scripts: package.lua_scripts()?,
            sql_commands: package.sql_commands()?,
            sql_migrations: package.sql_migrations()?,
        })
    }

    /// The files a packaged crate carries, in `checksums.txt` order; `license`
    /// is upstream's license text.
    #[must_use]
    pub fn files(&self, license: &str) -> Vec<GeneratedFile> {
        let file = |path: String, text: &str| GeneratedFile {
            path,
            text: text.to_owned(),
        };
        let mut files = vec![file(LICENSE_FILE.to_owned(), license)];
        for script in &self.lua_scripts {
            files.push(file(format!("lua/{}", script.file_name()), &script.text));
        }
        for command in &self.sql_commands {
            files.push(file(
                format!("sql/commands/{}.sql", command.name),
                &command.text,
            ));
        }
        let mut ledger = String::new();
        for migration in &self.sql_migrations {
            files.push(file(
                format!("sql/migrations/{}.sql", migration.name),
                &migration.text,
            ));
            let _ = writeln!(
                ledger,
                "{} {} {}",
                migration.version, migration.name, migration.min_client_version
            );
        }
        files.push(file(LEDGER_FILE.to_owned(), &ledger));
        files
    }
}

/// The digest `checksums.txt` records for a file: SHA-1 for Lua scripts (the
/// name Redis and Node.js BullMQ cache a script under), SHA-256 otherwise.
fn digest(path: &str, text: &str) -> String {
    if path.starts_with("lua/") {
        format!("sha1 {}", crate::lua::sha1_hex(text))
    } else {
        format!("sha256 {}", hex::encode(Sha256::digest(text.as_bytes())))
    }
}

/// The first line of `checksums.txt`: the pin the digests belong to.
fn pin_line() -> String {
    format!("pin {PACKAGE} {VERSION} {TARBALL_SHA256}")
}

/// Renders `checksums.txt` for `files` (what `cargo xtask upstream checksums` writes).
#[must_use]
pub fn render_checksums(files: &[GeneratedFile]) -> String {
    let mut out = String::from(
        "# Digests of the files extracted from the pinned npm package (see lua/README.md).\n\
         # Written by `cargo xtask upstream checksums`; every build checks what it embeds against them.\n",
    );
    let _ = writeln!(out, "{}", pin_line());
    for file in files {
        let _ = writeln!(out, "{} {}", digest(&file.path, &file.text), file.path);
    }
    out
}

/// A [`UpstreamError::Digest`] about `file`.
fn digest_error(file: &str, message: String) -> UpstreamError {
    UpstreamError::Digest {
        file: file.to_owned(),
        message,
    }
}

/// The committed digests, by path, in file order.
fn committed() -> Result<Vec<(String, String)>, UpstreamError> {
    let invalid = |msg: String| digest_error(CHECKSUMS_PATH, msg);
    let mut lines = CHECKSUMS
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'));
    let pin = lines.next().unwrap_or_default();
    if pin != pin_line() {
        return Err(invalid(format!(
            "it was written for `{pin}`, not the pinned `{}`: run `cargo xtask upstream \
             checksums` after bumping the pin (lua/README.md, \"Bumping the pin\")",
            pin_line()
        )));
    }
    lines
        .map(|line| {
            let mut parts = line.splitn(3, ' ');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(algo @ ("sha1" | "sha256")), Some(hex), Some(path)) => {
                    Ok((path.to_owned(), format!("{algo} {hex}")))
                }
                _ => Err(invalid(format!("unreadable line `{line}`"))),
            }
        })
        .collect()
}

/// Checks `files` against the committed digests: the same paths, the same digests.
///
/// # Errors
///
/// [`UpstreamError::Layout`] naming the first file that differs, is missing or
/// is not listed.
pub fn verify(files: &[GeneratedFile]) -> Result<(), UpstreamError> {
    let mut expected: BTreeMap<String, String> = committed()?.into_iter().collect();
    for file in files {
        let Some(want) = expected.remove(&file.path) else {
            return Err(digest_error(
                &file.path,
                format!("not listed in {CHECKSUMS_PATH}; {BUMP_HINT}"),
            ));
        };
        let got = digest(&file.path, &file.text);
        if got != want {
            return Err(digest_error(
                &file.path,
                format!("digest {got}, but {CHECKSUMS_PATH} says {want}; {BUMP_HINT}"),
            ));
        }
    }
    if let Some(path) = expected.keys().next() {
        return Err(digest_error(
            path,
            format!("listed in {CHECKSUMS_PATH} but not produced; {BUMP_HINT}"),
        ));
    }
    Ok(())
}

const BUMP_HINT: &str = "the text is not what the pin's checksums describe (after a pin bump, \
     run `cargo xtask upstream checksums` and review the diff; otherwise the files were altered)";

/// Reads the files a packaged crate carries in `dir`, verifies each against
/// the committed digests and parses them back.
pub(crate) fn load_packaged(dir: &Path) -> Result<Sources, UpstreamError> {
    let mut files = Vec::new();
    for (path, _) in committed()? {
        let full = dir.join(&path);
        let text = fs::read_to_string(&full).map_err(|e| io_error("read", &full, e))?;
        files.push(GeneratedFile { path, text });
    }
    verify(&files)?;

    let mut sources = Sources {
        lua_scripts: Vec::new(),
        sql_commands: Vec::new(),
        sql_migrations: Vec::new(),
    };
    let mut migration_text = BTreeMap::new();
    let mut ledger = None;
    for file in files {
        let path = PathBuf::from(&file.path);
        if let Some(rest) = file.path.strip_prefix("lua/") {
            let (name, num_keys) = crate::lua::split_file_name(Path::new(rest))?;
            let sha1_hex = crate::lua::sha1_hex(&file.text);
            sources.lua_scripts.push(LuaScript {
                name,
                num_keys,
                text: file.text,
                sha1_hex,
            });
        } else if let Some(rest) = file.path.strip_prefix("sql/commands/") {
            let name = crate::sql::sql_stem(rest).map_err(|m| layout_error(&path, m))?;
            sources.sql_commands.push(SqlFile {
                name,
                text: file.text,
            });
        } else if let Some(rest) = file.path.strip_prefix("sql/migrations/") {
            let name = crate::sql::sql_stem(rest).map_err(|m| layout_error(&path, m))?;
            migration_text.insert(name, file.text);
        } else if file.path == LEDGER_FILE {
            ledger = Some(file.text);
        }
    }
    let ledger = ledger.ok_or_else(|| layout_error(dir.join(LEDGER_FILE), "missing"))?;
    for line in ledger.lines() {
        let invalid = || layout_error(dir.join(LEDGER_FILE), format!("unreadable line `{line}`"));
        let mut parts = line.split(' ');
        let (Some(version), Some(name), Some(min), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid());
        };
        let text = migration_text.remove(name).ok_or_else(invalid)?;
        sources.sql_migrations.push(MigrationFile {
            version: version.parse().map_err(|_| invalid())?,
            name: name.to_owned(),
            min_client_version: min.parse().map_err(|_| invalid())?,
            text,
        });
    }
    sources.lua_scripts.sort_by_key(LuaScript::file_name);
    sources.sql_commands.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(sources)
}

/// Writes `files` into `dir` (created; files already there are replaced).
///
/// # Errors
///
/// File-system errors.
pub fn write_files(dir: &Path, files: &[GeneratedFile]) -> Result<(), UpstreamError> {
    for file in files {
        let path = dir.join(&file.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| io_error("create directory", parent, e))?;
        }
        fs::write(&path, &file.text).map_err(|e| io_error("write", &path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pinned package's text, extracted from the workspace's cache.
    fn extracted() -> (Sources, Vec<GeneratedFile>) {
        let root = crate::workspace_root().expect("unit tests run in the repository");
        let package = crate::obtain(&crate::cache_dir(&root)).expect("the pinned package");
        let sources = Sources::from_package(&package).expect("extracted");
        let files = sources.files(&package.license().expect("upstream's LICENSE"));
        (sources, files)
    }

    #[test]
    fn packaged_files_read_back_as_the_extracted_text_and_an_altered_one_is_refused() {
        let (sources, files) = extracted();
        verify(&files).expect("the extracted text matches checksums.txt");
        let dir = std::env::temp_dir().join(format!("bullmq-upstream-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        write_files(&dir, &files).expect("written");

        let loaded = load_packaged(&dir).expect("the packaged files load");
        assert_eq!(loaded, sources);
        assert_eq!(loaded.lua_scripts.len(), 64);
        assert_eq!(loaded.sql_commands.len(), 101);
        assert_eq!(loaded.sql_migrations.len(), 11);

        let altered = &files[1].path;
        assert!(altered.starts_with("lua/"), "{altered}");
        fs::write(dir.join(altered), format!("{}\n", files[1].text)).expect("altered");
        let err = load_packaged(&dir).expect_err("an altered script is refused");
        assert!(err.to_string().contains(altered.as_str()), "{err}");

        fs::remove_file(dir.join(LEDGER_FILE)).expect("removed");
        let err = load_packaged(&dir).expect_err("a missing file is refused");
        assert!(err.to_string().contains(LEDGER_FILE), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_not_listed_or_not_produced_is_refused() {
        let (_, mut files) = extracted();
        files.push(GeneratedFile {
            path: "lua/extra-1.lua".to_owned(),
            text: "return 1".to_owned(),
        });
        let err = verify(&files).expect_err("an extra file");
        assert!(err.to_string().contains("lua/extra-1.lua"), "{err}");
        files.pop();
        let missing = files.remove(0);
        let err = verify(&files).expect_err("a missing file");
        assert!(err.to_string().contains(&missing.path), "{err}");
    }
}
