//! Exit codes, and errors that name the target, the cause and the fix, never a password.

use crate::support::{Store, bullmq};

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["--no-such-flag"],
        vec!["jobs"],
        vec![
            "--url",
            "redis://127.0.0.1:6379",
            "jobs",
            "q",
            "--state",
            "nope",
        ],
        vec!["--url", "redis://127.0.0.1:6379", "jobs", "a:b"],
        vec!["--url", "mysql://root:hunter2@127.0.0.1/x", "queues"],
        vec![
            "--url",
            "redis://127.0.0.1:6379",
            "retry",
            "q",
            "--batch",
            "0",
        ],
    ] {
        let out = bullmq(&args).expect(2);
        assert!(!out.stderr.contains("hunter2"), "{out:?}");
    }
    let out = bullmq(&["queues"]).expect(2);
    assert!(
        out.stderr.contains("--url") && out.stderr.contains("BULLMQ_URL"),
        "{out:?}"
    );
}

#[test]
fn an_unreachable_store_fails_with_1_naming_it_without_its_password() {
    let port = bullmq_test_support::free_port();
    for url in [
        format!("redis://admin:s3cret-pw@127.0.0.1:{port}/0"),
        format!("postgres://postgres:s3cret-pw@127.0.0.1:{port}/test"),
    ] {
        for args in [
            vec!["queues"],
            vec!["-o", "json", "jobs", "q"],
            vec!["pause", "q"],
        ] {
            let mut full = vec!["--url", url.as_str()];
            full.extend(args);
            let out = bullmq(&full).expect(1);
            assert!(
                !out.stdout.contains("s3cret") && !out.stderr.contains("s3cret"),
                "{out:?}"
            );
            assert!(out.stderr.contains(&format!("127.0.0.1:{port}")), "{out:?}");
            assert!(
                out.stderr.starts_with("error: cannot connect to"),
                "{out:?}"
            );
            assert!(
                out.stderr.contains("check that the server is running"),
                "{out:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_job_fails_with_1() {
    for store in Store::both().await {
        let out = store.run(&["job", "q", "404"]).expect(1);
        assert!(
            out.stderr.contains(r#"no job "404" in queue "q""#),
            "{out:?}"
        );
    }
}
