//! `top` as a person sees it: run in tmux, read with capture-pane, driven with send-keys,
//! while a producer and a worker run; on Redis and on PostgreSQL.

use std::process::{Command, Stdio};
use std::time::Duration;

use bullmq::{JobError, JobOptions, JobState, QueueName, Worker, WorkerOptions};
use bullmq_test_support::unique_prefix;
use serde_json::json;

use crate::support::{BIN, Store};

/// How long the screen may take to show what is awaited (a loaded machine is slow).
const LIMIT: Duration = Duration::from_secs(60);

/// A tmux server of the test's own (its own socket), running `bullmq top` in one pane.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Whether tmux is installed.
    fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Starts `bullmq <args>` in a detached 200x40 pane.
    fn start(args: &[&str]) -> Self {
        let socket = format!("cli-top-{}", unique_prefix());
        let quoted: Vec<String> = std::iter::once(BIN)
            .chain(args.iter().copied())
            .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
            .collect();
        let shell = format!(
            "env -u BULLMQ_URL -u REDIS_URL -u DATABASE_URL -u BULLMQ_READ_ONLY NO_COLOR=1 {}",
            quoted.join(" ")
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "top",
            ])
            .args(["-x", "200", "-y", "40", &shell])
            .status()
            .expect("tmux runs");
        assert!(status.success(), "tmux new-session failed");
        Self { socket }
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// The pane's text.
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", "top"]).stdout)
            .into_owned()
    }

    fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", "-t", "top", keys]);
    }

    /// Whether `top` still runs in the pane.
    fn running(&self) -> bool {
        self.tmux(&["has-session", "-t", "top"]).status.success()
    }

    /// Waits until the screen satisfies `check`; panics with the last screen after [`LIMIT`].
    async fn until(&self, what: &str, check: impl Fn(&str) -> bool) {
        let deadline = tokio::time::Instant::now() + LIMIT;
        loop {
            let screen = self.screen();
            if check(&screen) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the screen never showed {what}:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Whether tmux is missing (the test then skips, saying so).
fn no_tmux() -> bool {
    let missing = !Tmux::available();
    if missing {
        eprintln!("skipped: tmux is not installed (apt-get install tmux); `top` is tested in it");
    }
    missing
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

/// The cells of `queue`'s row: state, waiting, active, delayed, failed, completed, in/s,
/// out/s, fail/s, oldest, workers, rates.
fn row(screen: &str, queue: &str) -> Option<Vec<String>> {
    screen.lines().find_map(|line| {
        let mut cells = line.trim_start_matches(['>', ' ']).split_whitespace();
        (cells.next() == Some(queue)).then(|| cells.map(str::to_owned).collect())
    })
}

/// Whether `queue`'s row shows `cells` at their columns (0 is the state).
fn shows(screen: &str, queue: &str, cells: &[(usize, &str)]) -> bool {
    row(screen, queue).is_some_and(|r| {
        cells
            .iter()
            .all(|(i, v)| r.get(*i).map(String::as_str) == Some(v))
    })
}

async fn the_counts_move_and_keys_pause(store: Store) {
    let queue = store.queue("live").await;
    for n in 0..3 {
        queue
            .add("mail", &json!({ "n": n }), JobOptions::default())
            .await
            .unwrap();
    }
    let top = Tmux::start(&store.args(&["top", "live", "--interval", "300"]));
    top.until("3 waiting jobs, rates from the event stream", |s| {
        shows(s, "live", &[(0, "running"), (1, "3"), (11, "events")])
    })
    .await;

    // A producer adds more, one of which will fail.
    for n in 3..6 {
        queue
            .add("mail", &json!({ "n": n }), JobOptions::default())
            .await
            .unwrap();
    }
    queue
        .add("bad", &json!({}), JobOptions::default())
        .await
        .unwrap();
    top.until("7 waiting jobs", |s| shows(s, "live", &[(1, "7")]))
        .await;

    let worker = Worker::new(
        QueueName::new("live").unwrap(),
        store.backend("live").await,
        WorkerOptions::new(),
        |job, _| async move {
            match job.name.as_str() {
                "bad" => Err(JobError::failed("planned failure")),
                _ => Ok(json!("sent")),
            }
        },
    )
    .await
    .unwrap();
    top.until("6 completed, 1 failed, none waiting, 1 worker", |s| {
        shows(s, "live", &[(1, "0"), (4, "1"), (5, "6"), (10, "1")])
    })
    .await;
    worker.close().await;

    // The keyboard: `p` pauses the selected (only) queue, `p` again resumes it.
    top.keys("p");
    top.until("the queue paused", |s| shows(s, "live", &[(0, "paused")]))
        .await;
    assert!(queue.is_paused().await.unwrap(), "{:?}", store.kind);
    top.keys("p");
    top.until("the queue running", |s| shows(s, "live", &[(0, "running")]))
        .await;
    assert!(!queue.is_paused().await.unwrap(), "{:?}", store.kind);

    // `f` opens the failed jobs, with their reason.
    top.keys("f");
    top.until("the failed job", |s| {
        s.contains("failed jobs of live") && s.contains("bad") && s.contains("planned failure")
    })
    .await;
    top.keys("q");
    let deadline = tokio::time::Instant::now() + LIMIT;
    while top.running() {
        assert!(tokio::time::Instant::now() < deadline, "`q` did not quit");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        queue
            .get_job_count_by_types(&[JobState::Failed.into()])
            .await
            .unwrap(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_shows_counts_moving_and_pauses_from_the_keyboard_on_redis() {
    if no_tmux() {
        return;
    }
    the_counts_move_and_keys_pause(Store::redis().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_shows_counts_moving_and_pauses_from_the_keyboard_on_postgres() {
    if no_tmux() {
        return;
    }
    the_counts_move_and_keys_pause(Store::postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_in_read_only_mode_refuses_to_pause() {
    if no_tmux() {
        return;
    }
    let store = Store::redis().await;
    let queue = store.queue("calm").await;
    queue
        .add("x", &json!({}), JobOptions::default())
        .await
        .unwrap();
    let top = Tmux::start(&store.args(&["--read-only", "top"]));
    top.until("the queue", |s| {
        shows(s, "calm", &[(0, "running"), (1, "1")])
    })
    .await;
    top.keys("p");
    top.until("the refusal", |s| s.contains("read-only mode"))
        .await;
    assert!(!queue.is_paused().await.unwrap());
}

#[test]
fn top_refuses_a_stdout_that_is_not_a_terminal() {
    let out = crate::support::bullmq(&["--url", "redis://127.0.0.1:6379", "top"]).expect(2);
    assert!(out.stderr.contains("draws on a terminal"), "{out:?}");
}
