//! `add`, `promote`, `clean`, `drain`, `remove`, `pause`, `resume`, `obliterate`, and what
//! guards them: `--dry-run`, `--yes`, `--read-only`.

use std::time::Duration;

use bullmq::options::JobOptions;
use bullmq::{JobId, JobState};
use serde_json::json;

use crate::support::{Store, bullmq, count};

/// Options of a job delayed by an hour, so that it stays delayed while the test runs.
fn an_hour_late() -> JobOptions {
    JobOptions {
        delay: Some(Duration::from_secs(3600)),
        ..JobOptions::default()
    }
}

/// The job whose id `add -o json` answered with `out`, read back from `queue`.
async fn added_job(
    queue: &bullmq::Queue<bullmq::AnyBackend>,
    out: &serde_json::Value,
) -> bullmq::Job {
    let id = out["id"].as_str().expect("an id");
    queue
        .get_job(&JobId::from(id))
        .await
        .unwrap()
        .expect("the added job")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_takes_data_from_arguments_files_stdin_and_json_lines() {
    for store in Store::both().await {
        let one = store.json(&[
            "add",
            "in",
            "arg",
            "--data",
            r#"{"a":1}"#,
            "--opts",
            r#"{"priority":5}"#,
        ]);
        assert_eq!(
            (
                one["command"].as_str(),
                one["queue"].as_str(),
                one["name"].as_str()
            ),
            (Some("add"), Some("in"), Some("arg"))
        );
        let queue = store.queue("in").await;
        let job = added_job(&queue, &one).await;
        assert_eq!(
            (job.data.as_str(), job.opts.priority),
            (r#"{"a":1}"#, Some(5))
        );

        let dir = std::env::temp_dir().join(format!("bullmq-cli-{}", store.ns));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("data.json");
        std::fs::write(&file, r#"{"from":"file"}"#).unwrap();
        let from_file = store.json(&["add", "in", "file", "--file", file.to_str().unwrap()]);
        let stdin = store.json_with_input(&["add", "in", "stdin", "-"], r#"{"from":"stdin"}"#);
        for (out, data) in [
            (&from_file, r#"{"from":"file"}"#),
            (&stdin, r#"{"from":"stdin"}"#),
        ] {
            let job = added_job(&queue, out).await;
            assert_eq!(job.data, data);
        }

        let lines: String = (0..2500)
            .map(|i| format!("{}\n", json!({"name": "bulk", "data": {"i": i}})))
            .collect();
        let bulk =
            store.json_with_input(&["add", "many", "--jsonl", "-", "--batch", "1000"], &lines);
        assert_eq!(
            (
                bulk["added"].as_u64(),
                bulk["lines"].as_u64(),
                bulk["batches"].as_u64()
            ),
            (Some(2500), Some(2500), Some(3)),
            "{bulk}"
        );
        assert_eq!(bulk["interrupted"], false);
        let many = store.queue("many").await;
        assert_eq!(count(&many, JobState::Waiting).await, 2500);
        // --skip resumes after the lines already added.
        let resumed =
            store.json_with_input(&["add", "many", "--jsonl", "-", "--skip", "2400"], &lines);
        assert_eq!(
            (resumed["added"].as_u64(), resumed["skipped"].as_u64()),
            (Some(100), Some(2400))
        );

        let bad = store
            .run_with_input(
                &["add", "many", "--jsonl", "-"],
                "{\"name\":\"x\"}\nnot json\n",
            )
            .expect(2);
        assert!(bad.stderr.contains("--jsonl line 2"), "{bad:?}");
        let bad = store.run(&["add", "in", "x", "--data", "{oops"]).expect(2);
        assert!(
            bad.stderr.contains("--data") && bad.stderr.contains("not JSON"),
            "{bad:?}"
        );
        let bad = store
            .run(&["add", "in", "x", "--opts", r#"{"attempts":"many"}"#])
            .expect(2);
        assert!(bad.stderr.contains("--opts"), "{bad:?}");
        std::fs::remove_dir_all(&dir).ok();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_runs_touch_nothing_and_read_only_refuses_before_connecting() {
    for store in Store::both().await {
        let queue = store.queue("q").await;
        let delayed = an_hour_late();
        for i in 0..3 {
            queue
                .add("w", &json!(i), JobOptions::default())
                .await
                .unwrap();
        }
        let d = queue.add("d", &json!(0), delayed).await.unwrap();
        for (args, matched) in [
            (vec!["promote", "q"], 1),
            (vec!["drain", "q", "--delayed"], 4),
            (vec!["clean", "q", "--state", "waiting", "--grace", "0"], 3),
            (vec!["retry", "q", "--state", "failed"], 0),
            (vec!["obliterate", "q"], 4),
            (vec!["remove", "q", d.id.as_str(), "nope"], 1),
        ] {
            let mut full = args.clone();
            full.extend(["--dry-run", "-o", "json"]);
            let out = store.run(&full).expect(0).json();
            assert_eq!(out["dry_run"], true, "{out}");
            assert_eq!(out["matched"], matched, "{args:?}: {out}");
            assert_eq!(out["done"], 0, "{args:?}: {out}");
            // Allowed in read-only mode too: a dry run changes nothing.
            let mut read_only = full.clone();
            read_only.push("--read-only");
            store.run(&read_only).expect(0);
        }
        assert_eq!(count(&queue, JobState::Waiting).await, 3);
        assert_eq!(count(&queue, JobState::Delayed).await, 1);

        for (name, args) in [
            ("pause", vec!["pause", "q", "--read-only"]),
            ("promote", vec!["promote", "q", "--yes", "--read-only"]),
            ("add", vec!["add", "q", "x", "--read-only"]),
            (
                "obliterate",
                vec!["obliterate", "q", "--yes", "--read-only"],
            ),
            (
                "rate-limit",
                vec!["rate-limit", "q", "--remove", "--read-only"],
            ),
            (
                "scheduler remove",
                vec!["scheduler", "remove", "q", "s", "--read-only"],
            ),
        ] {
            let out = store.run(&args).expect(2);
            let refusal = format!("refusing `{name}`: read-only mode");
            assert!(out.stderr.contains(&refusal), "{out:?}");
        }
        // BULLMQ_READ_ONLY too, and before connecting: a server that is not there is not asked.
        let mut cmd =
            crate::support::command(&["--url", "redis://127.0.0.1:1", "drain", "q", "--yes"]);
        cmd.env("BULLMQ_READ_ONLY", "1");
        let out = crate::support::finish(cmd, None).expect(2);
        assert!(out.stderr.contains("read-only"), "{out:?}");
        assert!(!queue.is_paused().await.unwrap());
        assert_eq!(count(&queue, JobState::Delayed).await, 1);

        // Without --yes and without a terminal to ask on: refused, nothing changed.
        let out = store.run(&["drain", "q"]).expect(2);
        assert!(out.stderr.contains("--yes"), "{out:?}");
        assert_eq!(count(&queue, JobState::Waiting).await, 3);
    }
}

/// Runs the bulk command `args` with `-o json`, which must succeed having `matched` jobs and
/// `done` them.
fn bulk(store: &Store, args: &[&str], matched: u64, done: u64) {
    let out = store
        .run(&[args, &["-o", "json"]].concat())
        .expect(0)
        .json();
    assert_eq!(
        (out["matched"].as_u64(), out["done"].as_u64()),
        (Some(matched), Some(done)),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_command_changes_the_store_as_it_says() {
    for store in Store::both().await {
        let queue = store.queue("q").await;
        let delayed = an_hour_late();
        for i in 0..3 {
            queue.add("d", &json!(i), delayed.clone()).await.unwrap();
        }
        let promoted = store.json(&["promote", "q", "--yes", "--batch", "2"]);
        assert_eq!(
            promoted,
            json!({"command": "promote", "queue": "q", "state": "delayed", "dry_run": false,
                   "matched": 3, "done": 3, "batches": promoted["batches"], "interrupted": false})
        );
        assert!(promoted["batches"].as_u64().unwrap() >= 2, "{promoted}");
        assert_eq!(
            (
                count(&queue, JobState::Delayed).await,
                count(&queue, JobState::Waiting).await
            ),
            (0, 3)
        );

        let paused = store.json(&["pause", "q"]);
        assert_eq!(
            paused,
            json!({"command": "pause", "queue": "q", "paused": true})
        );
        assert!(queue.is_paused().await.unwrap());
        store.run(&["resume", "q"]).expect(0);
        assert!(!queue.is_paused().await.unwrap());

        let ids: Vec<String> = queue
            .get_jobs(&[], bullmq::backend::Range::ALL)
            .await
            .unwrap()
            .iter()
            .map(|j| j.id.as_str().to_owned())
            .collect();
        let removed = store
            .run(&["remove", "q", &ids[0], "gone", "--yes", "-o", "json"])
            .expect(0)
            .json();
        assert_eq!(removed["removed"], json!([ids[0]]));
        assert_eq!(removed["missing"], json!(["gone"]));
        assert_eq!(
            queue.get_job(&JobId::from(ids[0].as_str())).await.unwrap(),
            None
        );
        // Again: nothing is removed twice.
        let again = store
            .run(&["remove", "q", &ids[0], "-o", "json"])
            .expect(0)
            .json();
        assert_eq!(
            (again["done"].as_u64(), again["missing"].clone()),
            (Some(0), json!([ids[0]]))
        );

        bulk(
            &store,
            &["clean", "q", "--state", "waiting", "--grace", "0", "--yes"],
            2,
            2,
        );
        assert_eq!(count(&queue, JobState::Waiting).await, 0);

        queue
            .add("w", &json!(1), JobOptions::default())
            .await
            .unwrap();
        bulk(&store, &["drain", "q", "--yes"], 1, 1);
        assert_eq!(count(&queue, JobState::Waiting).await, 0);
        let text = store.run(&["drain", "q", "--yes"]).expect(0).stdout;
        assert_eq!(
            text.trim(),
            r#"removed 0 waiting jobs of queue "q" in 0 batches"#
        );

        queue
            .add("w", &json!(1), JobOptions::default())
            .await
            .unwrap();
        store
            .queue("other")
            .await
            .add("w", &json!(1), JobOptions::default())
            .await
            .unwrap();
        bulk(&store, &["obliterate", "q", "--yes"], 1, 1);
        let queues = store.json(&["queues"]);
        let names: Vec<&str> = queues
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|q| q["name"].as_str())
            .collect();
        assert_eq!(names, ["other"], "{:?}", store.kind);
    }
}

#[test]
fn completions_are_printed_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = bullmq(&["completions", shell]).expect(0);
        assert!(
            out.stdout.contains("retry"),
            "{shell}: {}",
            out.stdout.len()
        );
    }
    bullmq(&["completions", "tcsh"]).expect(2);
}
