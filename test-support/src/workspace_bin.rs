//! Executables the tests run but cargo does not hand them (`CARGO_BIN_EXE_*` only exists for
//! the tested package's own binaries): another workspace package's binary, or an example.
//! They are built with `cargo build` into the running test's own target directory and profile
//! (a no-op when they are fresh).

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>` of the running test (`target/<profile>/deps/<test>-<hash>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps")
        .to_path_buf()
}

/// Runs `cargo build <args>` for the profile of this test and returns `target/<profile>/<rel>`.
fn build(args: &[&str], rel: &str) -> PathBuf {
    let profile_dir = profile_dir();
    let target_dir = profile_dir.parent().expect("target/<profile>");
    let profile = profile_dir
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a profile directory name");
    let profile = if profile == "debug" { "dev" } else { profile };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(crate::workspace_dir())
        .args(["build", "--quiet", "--profile", profile, "--target-dir"])
        .arg(target_dir)
        .args(args)
        .status()
        .expect("run cargo build");
    assert!(status.success(), "cargo build {args:?} failed");
    let path = profile_dir.join(rel);
    assert!(
        path.is_file(),
        "cargo build {args:?} left no {}",
        path.display()
    );
    path
}

/// The `bullmq-test-worker` binary (package `bullmq-test-worker`, not published).
pub fn test_worker() -> PathBuf {
    build(
        &["-p", "bullmq-test-worker", "--bin", "bullmq-test-worker"],
        "bullmq-test-worker",
    )
}

/// The facade's example `name`, built with the facade's `features` (say, the features the
/// calling test was built with).
pub fn example(name: &str, features: &[&str]) -> PathBuf {
    let features = features.join(",");
    build(
        &[
            "-p",
            "bullmq",
            "--example",
            name,
            "--no-default-features",
            "--features",
            &features,
        ],
        &format!("examples/{name}"),
    )
}

/// The facade's examples `names`, built in one `cargo build` with the facade's `features`;
/// their paths, in the order of `names`.
pub fn examples(names: &[&str], features: &[&str]) -> Vec<PathBuf> {
    let features = features.join(",");
    let mut args = vec![
        "-p",
        "bullmq",
        "--no-default-features",
        "--features",
        &features,
    ];
    for name in names {
        args.extend(["--example", name]);
    }
    let first = build(&args, &format!("examples/{}", names[0]));
    let dir = first
        .parent()
        .expect("target/<profile>/examples")
        .to_path_buf();
    names.iter().map(|name| dir.join(name)).collect()
}
