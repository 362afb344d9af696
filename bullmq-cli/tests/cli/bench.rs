//! `bench`: its JSON, and nothing left behind (its own prefix or schema removed).

use bullmq_test_support::{database_url, redis_url};

use crate::support::bullmq;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_measures_and_cleans_up_after_itself() {
    for url in [redis_url(), database_url()] {
        let out = bullmq(&[
            "--url",
            &url,
            "bench",
            "--jobs",
            "200",
            "--concurrency",
            "5",
            "-o",
            "json",
        ])
        .expect(0);
        let doc = out.json();
        assert_eq!(
            (doc["jobs"].as_u64(), doc["concurrency"].as_u64()),
            (Some(200), Some(5))
        );
        for field in [
            "add_secs",
            "jobs_per_sec_in",
            "process_secs",
            "jobs_per_sec_out",
        ] {
            assert!(
                doc[field].as_f64().is_some_and(|v| v > 0.0),
                "{field}: {doc}"
            );
        }
        // The namespace it used, from its first line on stderr.
        let namespace = out
            .stderr
            .lines()
            .next()
            .and_then(|l| l.rsplit(' ').next())
            .unwrap()
            .to_owned();
        assert!(namespace.starts_with("bullmq_bench_"), "{out:?}");
        if url.starts_with("redis") {
            let client = redis::Client::open(url.as_str()).unwrap();
            let mut con = client.get_multiplexed_async_connection().await.unwrap();
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{namespace}:*"))
                .query_async(&mut con)
                .await
                .unwrap();
            assert!(keys.is_empty(), "left behind: {keys:?}");
        } else {
            let mut admin = bullmq_test_support::postgres::admin().await;
            let left: bool = bullmq::postgres::sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            )
            .bind(&namespace)
            .fetch_one(&mut admin)
            .await
            .unwrap();
            assert!(!left, "schema {namespace} left behind");
        }
        bullmq(&["--url", &url, "--read-only", "bench", "--jobs", "1"]).expect(2);
    }
}
