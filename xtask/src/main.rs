//! `cargo xtask`: chores of the bullmq-rs repository.
//!
//! - `upstream generate`: writes the upstream text a packaged `bullmq-upstream`
//!   carries into `bullmq-upstream/generated/` (git-ignored), from the pinned
//!   tarball, after checking it against `bullmq-upstream/checksums.txt`.
//! - `upstream checksums`: rewrites `bullmq-upstream/checksums.txt` from the
//!   pinned tarball (after a pin bump; review the diff).
//! - `package [ARGS]` / `publish [ARGS]`: `upstream generate`, then
//!   `cargo package --workspace ARGS` / `cargo publish --workspace ARGS`.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use bullmq_upstream::{GENERATED_DIR_NAME, Sources};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: {err}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: cargo xtask upstream generate | upstream checksums | \
                     package [cargo package args] | publish [cargo publish args]";

fn run(args: &[String]) -> Result<(), String> {
    let root = bullmq_upstream::workspace_root()
        .ok_or("xtask runs inside the bullmq-rs repository only")?;
    match args.first().map(String::as_str) {
        Some("upstream") => match args.get(1).map(String::as_str) {
            Some("generate") => generate(&root),
            Some("checksums") => checksums(&root),
            _ => Err(USAGE.to_owned()),
        },
        Some(command @ ("package" | "publish")) => {
            generate(&root)?;
            forget_earlier_packages(&root)?;
            cargo(&root, command, &args[1..])
        }
        _ => Err(USAGE.to_owned()),
    }
}

/// The extracted text and upstream's license, from the pinned tarball.
fn extract(root: &Path) -> Result<(Sources, String), String> {
    let package = bullmq_upstream::obtain(&bullmq_upstream::cache_dir(root))
        .map_err(|err| err.to_string())?;
    let sources = Sources::from_package(&package).map_err(|err| err.to_string())?;
    let license = package.license().map_err(|err| err.to_string())?;
    Ok((sources, license))
}

fn generate(root: &Path) -> Result<(), String> {
    let (sources, license) = extract(root)?;
    let files = sources.files(&license);
    bullmq_upstream::verify(&files).map_err(|err| err.to_string())?;
    let dir = generated_dir(root);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|err| format!("cannot remove {}: {err}", dir.display()))?;
    }
    bullmq_upstream::write_files(&dir, &files).map_err(|err| err.to_string())?;
    eprintln!("xtask: wrote {} files to {}", files.len(), dir.display());
    Ok(())
}

fn checksums(root: &Path) -> Result<(), String> {
    let (sources, license) = extract(root)?;
    let path = root.join("bullmq-upstream/checksums.txt");
    let text = bullmq_upstream::render_checksums(&sources.files(&license));
    std::fs::write(&path, text).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    eprintln!(
        "xtask: wrote {}; review `git diff` before committing",
        path.display()
    );
    Ok(())
}

fn generated_dir(root: &Path) -> PathBuf {
    root.join("bullmq-upstream").join(GENERATED_DIR_NAME)
}

/// Where the packages are verified (also the target directory of `.ci/downstream.sh`, which
/// reuses what is compiled there).
const VERIFY_TARGET_DIR: &str = "target/package-verify";

/// Cargo verifies each package against the others through a temporary local registry. It keeps
/// the sources it unpacked from there under `$CARGO_HOME/registry/src/-<hash>/` and, as for any
/// registry crate, takes the artifacts built from them for fresh by name and version alone. A
/// later run with the same versions would verify against those stale copies, so they are
/// removed first: the temporary registry, the unpacked sources, and our crates' artifacts in
/// the verification target directory (third-party ones stay).
fn forget_earlier_packages(root: &Path) -> Result<(), String> {
    let remove = |path: &Path| {
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(path)
        } else {
            std::fs::remove_file(path)
        };
        removed.map_err(|err| format!("cannot remove {}: {err}", path.display()))
    };
    let tmp_registry = root.join(VERIFY_TARGET_DIR).join("package/tmp-registry");
    if tmp_registry.exists() {
        remove(&tmp_registry)?;
    }
    let profile = root.join(VERIFY_TARGET_DIR).join("debug");
    for dir in ["deps", ".fingerprint", "build"] {
        for entry in std::fs::read_dir(profile.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("bullmq") || name.starts_with("libbullmq") {
                remove(&entry.path())?;
            }
        }
    }
    let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"),
        PathBuf::from,
    );
    let Ok(sources) = std::fs::read_dir(cargo_home.join("registry/src")) else {
        return Ok(());
    };
    // Local (path) registries are named `-<hash>`; crates.io's sources are never touched.
    for registry in sources.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for entry in std::fs::read_dir(registry.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.file_name().to_string_lossy().starts_with("bullmq") {
                remove(&entry.path())?;
            }
        }
    }
    Ok(())
}

/// Cargo takes the git-ignored `generated/` it packages for uncommitted changes, so the check
/// that nothing else is uncommitted is done here, and cargo is told `--allow-dirty`.
fn ensure_committed(root: &Path, args: &[String]) -> Result<(), String> {
    if args.iter().any(|arg| arg == "--allow-dirty") {
        return Ok(());
    }
    let Ok(output) = Command::new("git")
        .current_dir(root)
        .args(["status", "--porcelain"])
        .output()
    else {
        return Ok(()); // Not a git checkout (or no git): nothing to compare with.
    };
    let changes = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && !changes.trim().is_empty() {
        return Err(format!(
            "uncommitted changes (commit them, or pass --allow-dirty):\n{changes}"
        ));
    }
    Ok(())
}

/// `--exclude` of the members that are not published (`publish = false`).
const UNPUBLISHED: &[&str] = &[
    "--exclude",
    "xtask",
    "--exclude",
    "bullmq-test-worker",
    "--exclude",
    "bullmq-test-support",
];

fn cargo(root: &Path, command: &str, args: &[String]) -> Result<(), String> {
    ensure_committed(root, args)?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .arg(command)
        .arg("--workspace")
        .args(args)
        .args((!args.iter().any(|arg| arg == "--allow-dirty")).then_some("--allow-dirty"))
        .arg("--target-dir")
        .arg(root.join(VERIFY_TARGET_DIR))
        // `cargo publish` skips the unpublished members by itself, `cargo package` does not.
        .args(if command == "package" {
            UNPUBLISHED
        } else {
            &[]
        })
        .status()
        .map_err(|err| format!("cannot run cargo {command}: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {command} --workspace failed ({status})"))
    }
}
