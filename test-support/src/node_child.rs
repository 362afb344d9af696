//! A Node.js script that stays up while a test runs beside it: it prints a line when it has
//! something to say (it is ready, or what it saw), then waits for a line on stdin to close.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use crate::node::{assert_installed, node_dir};
use crate::urls::redis_url;

/// How long a script may take to print its line.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

/// `node -e <script> <redis url> <args…>` running in `tests/node` (so it loads the pinned
/// bullmq), its stdin and stdout piped to the test.
pub struct NodeChild {
    child: Child,
    stdout: Option<BufReader<ChildStdout>>,
}

impl NodeChild {
    /// Starts `script` with the test Redis' URL and then `args` as its arguments; panics with
    /// what to do when Node.js or the pinned packages are missing.
    pub fn spawn(script: &str, args: &[&str]) -> Self {
        let dir = node_dir();
        assert_installed(&dir);
        let mut child = Command::new("node")
            .arg("-e")
            .arg(script)
            .arg(redis_url())
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `node` ({e}): install Node.js 20"));
        let stdout = child.stdout.take().map(BufReader::new);
        Self { child, stdout }
    }

    /// The next line the script prints, trimmed; panics naming `what` when none comes in 15 s.
    pub async fn line(&mut self, what: &str) -> String {
        let mut stdout = self.stdout.take().expect("node's stdout");
        let read = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            stdout.read_line(&mut line).map(|_| (line, stdout))
        });
        let (line, stdout) = tokio::time::timeout(ANSWER_WITHIN, read)
            .await
            .unwrap_or_else(|_| panic!("node {what} within {ANSWER_WITHIN:?}"))
            .expect("the reading task")
            .expect("node's output");
        self.stdout = Some(stdout);
        line.trim().to_owned()
    }

    /// Tells the script to close (a line on its stdin) and asserts it exits successfully.
    pub async fn finish(mut self) {
        let mut stdin = self.child.stdin.take().expect("node's stdin");
        stdin.write_all(b"done\n").expect("tell node to stop");
        drop(stdin);
        let mut child = self.child;
        let status = tokio::task::spawn_blocking(move || child.wait())
            .await
            .expect("the waiting task")
            .expect("node exits");
        assert!(status.success(), "node exited with {status}");
    }
}
