//! `queues`, `jobs`, `job`, `workers`, `schedulers`, `metrics` on queues filled by Rust and
//! Node.js, on both stores.

use std::time::Duration;

use bullmq::options::JobOptions;
use bullmq::{
    JobError, JobScheduler, JobTemplate, QueueName, RepeatOptions, Worker, WorkerOptions,
};
use bullmq_test_support::eventually;
use serde_json::json;

use crate::support::{Store, count};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_and_jobs_show_what_rust_and_node_added() {
    for store in Store::both().await {
        let mail = store.queue("mail").await;
        mail.add("welcome", &json!({"to": "a@b.c"}), JobOptions::default())
            .await
            .unwrap();
        let node_id = store.node_add("mail", "node-job", r#"{"from":"node"}"#);
        let slow = store.queue("slow").await;
        let delayed = JobOptions {
            delay: Some(Duration::from_secs(3600)),
            ..JobOptions::default()
        };
        slow.add("later", &json!(1), delayed).await.unwrap();
        slow.pause().await.unwrap();

        let queues = store.json(&["queues"]);
        let names: Vec<&str> = queues
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["mail", "slow"], "{queues} ({:?})", store.kind);
        let counts = |waiting: u64, delayed: u64| {
            json!({"active": 0, "completed": 0, "delayed": delayed, "failed": 0,
                   "prioritized": 0, "waiting": waiting, "waiting_children": 0})
        };
        assert_eq!(
            queues[0],
            json!({"name": "mail", "paused": false, "workers": 0, "counts": counts(2, 0)})
        );
        assert_eq!(
            queues[1],
            json!({"name": "slow", "paused": true, "workers": 0, "counts": counts(0, 1)})
        );

        let jobs = store
            .run(&[
                "jobs", "mail", "--state", "waiting", "--sort", "asc", "-o", "jsonl",
            ])
            .expect(0)
            .lines();
        assert_eq!(jobs.len(), 2, "{jobs:?}");
        assert_eq!(
            (jobs[0]["name"].as_str(), &jobs[0]["data"]),
            (Some("welcome"), &json!({"to": "a@b.c"}))
        );
        assert_eq!(
            (jobs[1]["id"].as_str(), jobs[1]["name"].as_str()),
            (Some(node_id.as_str()), Some("node-job"))
        );
        assert_eq!(jobs[1]["data"], json!({"from": "node"}));
        assert!(
            jobs.iter()
                .all(|j| j["state"] == "waiting" && j["attempts_made"] == 0)
        );
        let named = store.json(&["jobs", "mail", "--name", "node-job"]);
        assert_eq!(named.as_array().map(Vec::len), Some(1), "{named}");
        let paged = store.json(&[
            "jobs",
            "mail",
            "--state",
            "waiting",
            "--per-page",
            "1",
            "--page",
            "2",
            "--sort",
            "asc",
        ]);
        assert_eq!(paged[0]["id"].as_str(), Some(node_id.as_str()), "{paged}");

        let job = store.json(&["job", "mail", &node_id]);
        assert_eq!(job["id"].as_str(), Some(node_id.as_str()));
        assert_eq!(job["name"], "node-job");
        assert_eq!(job["state"], "waiting");
        assert_eq!(job["data"], json!({"from": "node"}));
        assert_eq!(job["logs"], json!([]));
        assert_eq!(
            job["children"],
            json!({"processed": [], "unprocessed": [], "failed": [], "ignored": []})
        );
        assert_eq!(job["parent"], json!(null));
        let text = store.run(&["job", "mail", &node_id]).expect(0).stdout;
        assert!(
            text.contains("node-job") && text.contains(r#"{"from":"node"}"#),
            "{text}"
        );
        let table = store.run(&["queues"]).expect(0).stdout;
        assert!(
            table.contains("mail") && table.contains("WAITING"),
            "{table}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_shows_its_failure_logs_and_a_large_return_value_cut() {
    for store in Store::both().await {
        let queue = store.queue("work").await;
        let bad = queue
            .add("bad", &json!({"n": 1}), JobOptions::default())
            .await
            .unwrap();
        let good = queue
            .add("good", &json!({"n": 2}), JobOptions::default())
            .await
            .unwrap();
        let name = QueueName::new("work").unwrap();
        let opts = WorkerOptions::new().name("cli-test".to_owned());
        let worker = Worker::new(
            name,
            store.backend("work").await,
            opts,
            |job, _| async move {
                job.log("step one")
                    .await
                    .map_err(|e| JobError::failed(e.to_string()))?;
                match job.name.as_str() {
                    "bad" => Err(JobError::failed("boom")),
                    _ => Ok(json!({"blob": "y".repeat(2000)})),
                }
            },
        )
        .await
        .unwrap();
        eventually("both jobs finish", Duration::from_secs(20), || async {
            count(&queue, bullmq::JobState::Failed).await == 1
                && count(&queue, bullmq::JobState::Completed).await == 1
        })
        .await;
        let workers = store.json(&["workers", "work"]);
        assert_eq!(
            workers.as_array().map(Vec::len),
            Some(1),
            "{workers} ({:?})",
            store.kind
        );
        worker.close().await;

        let failed = store.json(&["job", "work", bad.id.as_str()]);
        assert_eq!(failed["state"], "failed");
        assert_eq!(failed["failed_reason"], "boom");
        assert_eq!(failed["attempts_made"], 1);
        assert_eq!(failed["logs"], json!(["step one"]));
        assert_eq!(failed["logs_count"], 1);
        assert!(failed["finished_on"].as_u64().is_some(), "{failed}");

        let done = store.json(&["job", "work", good.id.as_str()]);
        assert_eq!(done["state"], "completed");
        let size = json!({"blob": "y".repeat(2000)}).to_string().len();
        assert_eq!(done["return_value"]["truncated"], true, "{done}");
        assert_eq!(done["return_value"]["size"], size);
        let whole = store
            .run(&["job", "work", good.id.as_str(), "-o", "json", "--full"])
            .expect(0)
            .json();
        assert_eq!(whole["return_value"], json!({"blob": "y".repeat(2000)}));
        let text = store
            .run(&["job", "work", good.id.as_str()])
            .expect(0)
            .stdout;
        assert!(
            text.contains(&format!("({size} bytes; --full shows all)")),
            "{text}"
        );

        let prometheus = store
            .run(&["metrics", "work", "--prometheus"])
            .expect(0)
            .stdout;
        assert!(
            prometheus.contains(r#"bullmq_job_count{queue="work", state="failed"} 1"#),
            "{prometheus}"
        );
        let metrics = store.json(&["metrics", "work"]);
        assert_eq!(metrics["queue"], "work");
        for series in ["completed", "failed"] {
            for field in ["total", "points", "prev_ts", "prev_count", "per_minute"] {
                assert!(
                    !metrics[series][field].is_null(),
                    "{series}.{field} in {metrics}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedulers_are_listed() {
    for store in Store::both().await {
        let schedulers = JobScheduler::new(store.backend("cron").await);
        let every = RepeatOptions {
            every: Some(Duration::from_secs(60)),
            ..RepeatOptions::default()
        };
        schedulers
            .upsert(
                "tick",
                &every,
                JobTemplate::named("tick-job").data(json!({"k": 1})),
            )
            .await
            .unwrap();
        let list = store.json(&["schedulers", "cron"]);
        assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
        assert_eq!(list[0]["id"], "tick");
        assert_eq!(list[0]["name"], "tick-job");
        assert_eq!(list[0]["every_ms"], 60_000);
        assert_eq!(list[0]["template_data"], json!({"k": 1}));
        assert!(list[0]["next_millis"].as_u64().is_some(), "{list}");
        let text = store.run(&["schedulers", "cron"]).expect(0).stdout;
        assert!(text.contains("every 60000 ms"), "{text}");
    }
}
