//! The quick start on a machine where nothing answers at the default Redis URL: with
//! `REDIS_URL` unset it starts a private redis-server, processes its five jobs there, and the
//! server is gone once it has exited.
//!
//! The shared test server is at the real default URL, so the example's default is pointed at
//! a free port through its test-only `BULLMQ_QUICKSTART_DEFAULT_URL`.

use crate::support;

use bullmq_test_support::free_port;
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

/// Whether something accepts connections on `127.0.0.1:<port>`.
fn listening(port: u16) -> bool {
    let addr = ([127, 0, 0, 1], port).into();
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
}

#[test]
fn the_quick_start_starts_a_private_redis_when_none_answers_and_stops_it() {
    let example = support::workspace_bin::example("quickstart", &crate::features());
    let port = free_port();
    assert!(!listening(port));

    let output = Command::new(&example)
        .env_remove("REDIS_URL")
        .env_remove("DATABASE_URL")
        .env(
            "BULLMQ_QUICKSTART_DEFAULT_URL",
            format!("redis://127.0.0.1:{port}"),
        )
        .output()
        .expect("run the quick start");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "quick start failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );

    let announce = stdout
        .lines()
        .find(|line| line.contains("started a private redis-server at redis://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no line about the private server in:\n{stdout}"));
    let private_port: u16 = announce
        .split("redis://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no port in {announce:?}"));
    assert!(
        stdout.contains("done: 5 jobs processed by the Rust worker"),
        "five jobs not processed:\n{stdout}"
    );
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains(" completed: "))
            .count(),
        5,
        "{stdout}"
    );
    // The private server stopped with the example (it is killed and waited for before exit).
    assert!(
        !listening(private_port),
        "the private redis-server on {private_port} still runs"
    );
}
