//! `scheduler upsert|remove`, `concurrency` and `rate-limit`: their JSON, and the store
//! afterwards, on Redis and PostgreSQL.

use std::time::Duration;

use bullmq::JobScheduler;
use serde_json::json;

use crate::support::Store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedulers_are_upserted_and_removed() {
    for store in Store::both().await {
        let queue = store.queue("reports").await;
        let out = store.json(&[
            "scheduler",
            "upsert",
            "reports",
            "digest",
            "--every",
            "60000",
            "--name",
            "daily",
            "--data",
            r#"{"kind":"digest"}"#,
            "--opts",
            r#"{"attempts":3}"#,
        ]);
        assert_eq!(out["command"], "scheduler upsert");
        assert_eq!(
            (&out["queue"], &out["id"]),
            (&json!("reports"), &json!("digest"))
        );
        let next = out["next_job_id"].as_str().unwrap().to_owned();
        assert!(out["delay_ms"].as_u64().is_some(), "{out}");
        let schedulers = JobScheduler::new(queue.backend().clone());
        let record = schedulers.get("digest").await.unwrap().unwrap();
        assert_eq!(record.name, "daily");
        assert_eq!(record.schedule.every, Some(Duration::from_secs(60)));
        assert_eq!(
            record.template_data.as_deref(),
            Some(r#"{"kind":"digest"}"#)
        );
        let job = queue
            .get_job(&bullmq::JobId::from(next.as_str()))
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("the next job {next} exists ({:?})", store.kind));
        assert_eq!(job.opts.attempts, Some(3), "{:?}", store.kind);

        // A cron pattern replaces the interval.
        store
            .run(&[
                "scheduler",
                "upsert",
                "reports",
                "digest",
                "--pattern",
                "0 0 * * * *",
                "--tz",
                "Europe/Paris",
            ])
            .expect(0);
        let record = schedulers.get("digest").await.unwrap().unwrap();
        assert_eq!(record.schedule.pattern.as_deref(), Some("0 0 * * * *"));
        assert_eq!(record.schedule.tz.as_deref(), Some("Europe/Paris"));

        let bad = store
            .run(&[
                "scheduler",
                "upsert",
                "reports",
                "x",
                "--pattern",
                "61 * * * *",
            ])
            .expect(2);
        assert!(bad.stderr.contains("the schedule is refused"), "{bad:?}");
        store
            .run(&["scheduler", "upsert", "reports", "x"])
            .expect(2);
        assert!(schedulers.get("x").await.unwrap().is_none());

        let removed = store.json(&["scheduler", "remove", "reports", "digest"]);
        assert_eq!(
            removed,
            json!({"command": "scheduler remove", "queue": "reports", "id": "digest", "removed": true})
        );
        assert!(schedulers.get("digest").await.unwrap().is_none());
        let again = store.json(&["scheduler", "remove", "reports", "digest"]);
        assert_eq!(again["removed"], false);
        store
            .run(&["--read-only", "scheduler", "remove", "reports", "digest"])
            .expect(2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_concurrency_and_rate_limit_are_read_and_set() {
    for store in Store::both().await {
        let queue = store.queue("api").await;
        let read = store.json(&["concurrency", "api"]);
        assert_eq!(read, json!({"queue": "api", "concurrency": null}));
        let set = store.json(&["concurrency", "api", "4"]);
        assert_eq!(set, json!({"queue": "api", "concurrency": 4}));
        assert_eq!(queue.get_global_concurrency().await.unwrap(), Some(4));
        store
            .run(&["--read-only", "concurrency", "api", "9"])
            .expect(2);
        store.run(&["--read-only", "concurrency", "api"]).expect(0);
        store.run(&["concurrency", "api", "0"]).expect(2);
        assert_eq!(queue.get_global_concurrency().await.unwrap(), Some(4));
        let removed = store.json(&["concurrency", "api", "--remove"]);
        assert_eq!(removed["concurrency"], json!(null));
        assert_eq!(queue.get_global_concurrency().await.unwrap(), None);

        let none = store.json(&["rate-limit", "api"]);
        assert_eq!(
            none,
            json!({"queue": "api", "max": null, "duration_ms": null})
        );
        let set = store.json(&["rate-limit", "api", "--max", "10", "--duration", "1000"]);
        assert_eq!(set, json!({"queue": "api", "max": 10, "duration_ms": 1000}));
        let limit = queue.get_global_rate_limit().await.unwrap().unwrap();
        assert_eq!((limit.max, limit.duration), (10, Duration::from_secs(1)));
        store.run(&["rate-limit", "api", "--max", "10"]).expect(2);
        store
            .run(&["rate-limit", "api", "--remove", "-o", "json"])
            .expect(0);
        assert!(queue.get_global_rate_limit().await.unwrap().is_none());
    }
}
