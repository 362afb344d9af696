//! Obtaining, verifying and unpacking the pinned tarball.
//!
//! Several build scripts may run this at the same time against one cache
//! directory, so nothing is ever written in place: downloads and unpacks go to
//! a private temporary directory inside the cache and are renamed into their
//! final place, which is atomic on one file system. Whoever renames first wins;
//! the others notice the finished result and throw their own copy away.

use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::error::{UpstreamError, io_error};
use crate::{
    PACKAGE, Package, TARBALL_ENV, TARBALL_FILE_NAME, TARBALL_SHA256, UNPACKED_DIR_NAME, VERSION,
};

/// Name of the marker file written into the unpacked directory once the
/// tarball it came from has been verified. It holds the tarball's SHA-256.
pub(crate) const MARKER_FILE_NAME: &str = ".verified-sha256";

/// See [`crate::obtain`].
pub(crate) fn obtain(cache_dir: &Path) -> Result<Package, UpstreamError> {
    let cache_dir = std::path::absolute(cache_dir)
        .map_err(|e| io_error("resolve the cache directory", cache_dir, e))?;
    fs::create_dir_all(&cache_dir)
        .map_err(|e| io_error("create the cache directory", &cache_dir, e))?;
    let unpacked = cache_dir.join(UNPACKED_DIR_NAME);

    // A tarball named explicitly is always checked, even when an earlier build
    // already unpacked a verified copy: a wrong file must not go unnoticed.
    let explicit = explicit_tarball()?;
    if let Some(path) = &explicit {
        verify_file(path)?;
    }

    if !marker_is_valid(&unpacked) {
        let tarball = match explicit {
            Some(path) => path,
            None => cached_or_downloaded_tarball(&cache_dir)?,
        };
        unpack(&tarball, &cache_dir, &unpacked)?;
    }

    Ok(Package::new(unpacked))
}

/// The tarball named by `BULLMQ_UPSTREAM_TARBALL`, if that variable is set.
fn explicit_tarball() -> Result<Option<PathBuf>, UpstreamError> {
    match std::env::var_os(TARBALL_ENV) {
        Some(value) if !value.is_empty() => {
            let path = PathBuf::from(value);
            let path = std::path::absolute(&path)
                .map_err(|e| io_error("resolve the path in BULLMQ_UPSTREAM_TARBALL", &path, e))?;
            Ok(Some(path))
        }
        _ => Ok(None),
    }
}

/// `<cache>/bullmq-6.7.6.tgz`, downloading it with `npm pack` first if needed.
fn cached_or_downloaded_tarball(cache_dir: &Path) -> Result<PathBuf, UpstreamError> {
    let cached = cache_dir.join(TARBALL_FILE_NAME);
    if cached.is_file() {
        verify_file(&cached)?;
        return Ok(cached);
    }

    let tmp = TempDir::create(cache_dir, "npm-pack")?;
    run_npm_pack(tmp.path())?;
    let packed = tmp.path().join(TARBALL_FILE_NAME);
    if !packed.is_file() {
        return Err(io_error(
            "find the tarball written by `npm pack` at",
            packed,
            io::Error::from(io::ErrorKind::NotFound),
        ));
    }
    verify_file(&packed)?;
    if let Err(err) = fs::rename(&packed, &cached) {
        // Another build script may have put an identical file there first
        // (renaming over an existing file fails on some platforms).
        if !cached.is_file() {
            return Err(io_error("move the downloaded tarball to", cached, err));
        }
    }
    drop(tmp);
    Ok(cached)
}

/// Runs `npm pack bullmq@6.7.6 --pack-destination <dir>` in `dir`.
fn run_npm_pack(dir: &Path) -> Result<(), UpstreamError> {
    // On Windows npm is a batch file, which `Command` does not find by its bare name.
    let program = if cfg!(windows) { "npm.cmd" } else { "npm" };
    let mut destination = OsString::from("--pack-destination=");
    destination.push(dir.as_os_str());
    let output = Command::new(program)
        .arg("pack")
        .arg(format!("{PACKAGE}@{VERSION}"))
        .arg(destination)
        .current_dir(dir)
        .output()
        .map_err(|source| UpstreamError::NpmNotFound { source })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(UpstreamError::NpmFailed {
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }
}

/// Checks that `path` has the pinned SHA-256.
fn verify_file(path: &Path) -> Result<(), UpstreamError> {
    let actual = sha256_file(path)?;
    if actual == TARBALL_SHA256 {
        Ok(())
    } else {
        Err(UpstreamError::ChecksumMismatch {
            path: path.to_path_buf(),
            expected: TARBALL_SHA256,
            actual,
        })
    }
}

/// The SHA-256 of a file, lowercase hex.
pub(crate) fn sha256_file(path: &Path) -> Result<String, UpstreamError> {
    let mut file = fs::File::open(path).map_err(|e| io_error("open", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(|e| io_error("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Whether `unpacked` is a complete unpack of the pinned tarball.
fn marker_is_valid(unpacked: &Path) -> bool {
    fs::read_to_string(unpacked.join(MARKER_FILE_NAME))
        .is_ok_and(|content| content.trim() == TARBALL_SHA256)
}

/// Unpacks `tarball` (already verified) into `unpacked`, atomically.
fn unpack(tarball: &Path, cache_dir: &Path, unpacked: &Path) -> Result<(), UpstreamError> {
    let tmp = TempDir::create(cache_dir, "unpack")?;
    let file = fs::File::open(tarball).map_err(|e| io_error("open", tarball, e))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(io::BufReader::new(file)));
    archive
        .unpack(tmp.path())
        .map_err(|e| io_error("unpack", tarball, e))?;
    if !tmp.path().join("package").is_dir() {
        return Err(crate::error::layout_error(
            tarball,
            "the tarball has no top-level `package/` directory",
        ));
    }
    let marker = tmp.path().join(MARKER_FILE_NAME);
    fs::write(&marker, format!("{TARBALL_SHA256}\n")).map_err(|e| io_error("write", marker, e))?;

    if fs::rename(tmp.path(), unpacked).is_ok() {
        tmp.disarm();
        return Ok(());
    }
    if marker_is_valid(unpacked) {
        // A parallel build finished first; its copy is as good as ours.
        return Ok(());
    }
    // Something else is in the way (an interrupted older layout, or a
    // directory somebody edited): move it aside, then retry once.
    let stale = cache_dir.join(unique_name("stale"));
    if let Err(err) = fs::rename(unpacked, &stale)
        && unpacked.exists()
    {
        return Err(io_error("move aside the incomplete", unpacked, err));
    }
    let _ = fs::remove_dir_all(&stale);
    match fs::rename(tmp.path(), unpacked) {
        Ok(()) => {
            tmp.disarm();
            Ok(())
        }
        Err(_) if marker_is_valid(unpacked) => Ok(()),
        Err(err) => Err(io_error("move the unpacked package to", unpacked, err)),
    }
}

/// A name unique to this process and call, for temporary entries in the cache.
fn unique_name(purpose: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        ".{UNPACKED_DIR_NAME}.{purpose}-{}-{nanos}-{n}.tmp",
        std::process::id()
    )
}

/// A directory removed (with its content) when dropped, unless disarmed.
struct TempDir {
    path: PathBuf,
    armed: bool,
}

impl TempDir {
    fn create(parent: &Path, purpose: &str) -> Result<Self, UpstreamError> {
        let path = parent.join(unique_name(purpose));
        fs::create_dir(&path).map_err(|e| io_error("create directory", &path, e))?;
        Ok(Self { path, armed: true })
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the directory: it has been renamed into its final place.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.armed {
            // Best effort: a leftover temporary directory is harmless.
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}
