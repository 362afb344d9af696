//! A `redis-server` of a test's own, for tests that kill, pause, reconfigure or cut off their
//! server (or need TLS): the shared server is never disturbed.

use std::path::PathBuf;
use std::process::Command;

use crate::{free_port, tls::make_test_certificates, unique_prefix};

/// A private `redis-server` on a free loopback port, killed (and its folder removed) on drop;
/// for tests that kill connections or need TLS, so the shared server is never disturbed.
pub struct PrivateRedis {
    child: std::process::Child,
    /// The port it listens on (TLS only when started with [`PrivateRedis::start_tls`]).
    pub port: u16,
    /// Its working folder (certificates live here too).
    pub dir: PathBuf,
    /// The arguments it was started with, to start it again the same way.
    args: Vec<String>,
}

impl PrivateRedis {
    /// A plain-TCP server.
    pub fn start() -> Self {
        Self::start_with(|port, _| vec!["--port".into(), port.to_string()])
    }

    /// A TLS-only server (`--port 0`) whose certificate, for `localhost` and `127.0.0.1`, is
    /// signed by a throwaway CA at `<dir>/ca.crt`. Panics with the reason when the installed
    /// `redis-server` was built without TLS or `openssl` is missing.
    pub fn start_tls() -> Self {
        Self::start_with(|port, dir| {
            make_test_certificates(dir);
            let file = |name: &str| dir.join(name).display().to_string();
            vec![
                "--port".into(),
                "0".into(),
                "--tls-port".into(),
                port.to_string(),
                "--tls-cert-file".into(),
                file("server.crt"),
                "--tls-key-file".into(),
                file("server.key"),
                "--tls-ca-cert-file".into(),
                file("ca.crt"),
                "--tls-auth-clients".into(),
                "no".into(),
            ]
        })
    }

    /// A plain-TCP server that writes every command to its append-only file before it
    /// answers (`appendfsync always`), so a crash loses nothing that was acknowledged and
    /// [`restart`](Self::restart) brings the data back.
    pub fn start_durable() -> Self {
        Self::start_with(|port, _| {
            [
                "--port",
                &port.to_string(),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ]
            .map(str::to_owned)
            .to_vec()
        })
    }

    /// A server started with `args(port, dir)`, without persistence unless `args` turns it
    /// on. The free port is only
    /// free when chosen: another process may bind it before the server does, and then the
    /// server is started again on another.
    pub fn start_with(args: impl Fn(u16, &std::path::Path) -> Vec<String>) -> Self {
        let dir = std::env::temp_dir().join(unique_prefix());
        std::fs::create_dir_all(&dir).expect("create a temp folder");
        let mut attempts = 0;
        loop {
            let port = free_port();
            let args = args(port, &dir);
            let mut child = Self::spawn(&args, &dir);
            match Self::ready(&mut child) {
                Ok(()) => {
                    return Self {
                        child,
                        port,
                        dir,
                        args,
                    };
                }
                Err(log) if log.contains("Address already in use") && attempts < 5 => {
                    attempts += 1;
                }
                Err(log) => panic!("redis-server exited before it was ready:\n{log}"),
            }
        }
    }

    fn spawn(args: &[String], dir: &std::path::Path) -> std::process::Child {
        let mut cmd = Command::new("redis-server");
        // The defaults first: a later option wins, so `args` can override them.
        cmd.args(["--save", "", "--appendonly", "no"])
            .args(args)
            .arg("--dir")
            .arg(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn()
            .unwrap_or_else(|e| panic!("cannot start redis-server ({e}): install Redis 7"))
    }

    /// Kills the server with SIGKILL (a crash: without persistence its data is gone); start it
    /// again with [`restart`](Self::restart).
    pub fn kill_server(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again, on the same port with the same arguments (killing it first
    /// if it still runs).
    pub fn restart(&mut self) {
        self.kill_server();
        self.child = Self::spawn(&self.args, &self.dir);
        self.wait_listening();
    }

    /// Waits until the server is ready; panics with its output if it exits first.
    fn wait_listening(&mut self) {
        if let Err(log) = Self::ready(&mut self.child) {
            panic!("redis-server exited before it was ready:\n{log}");
        }
    }

    /// Reads the server's log until it says it is ready, or returns the log (and the exit
    /// status) if it exits first. The log pipe is closed afterwards (Redis ignores SIGPIPE),
    /// so it never fills up.
    fn ready(child: &mut std::process::Child) -> Result<(), String> {
        use std::io::BufRead;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut log = String::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains("Ready to accept connections") {
                return Ok(());
            }
            log.push_str(&line);
            log.push('\n');
        }
        if let Some(mut stderr) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut log);
        }
        let status = child.wait().expect("wait for redis-server");
        log.push_str(&format!("({status})"));
        Err(log)
    }

    /// The server's process id (to freeze it with SIGSTOP).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A connection of the test's own, for commands the library under test does not send.
    pub async fn admin(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("admin connection")
    }

    /// Cuts every client connection but a fresh admin one (see [`kill_clients`]); how many
    /// were cut.
    pub async fn kill_clients(&self) -> u64 {
        kill_clients(&mut self.admin().await).await
    }

    /// `CONFIG SET name value`.
    pub async fn config_set(&self, name: &str, value: &str) {
        let () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query_async(&mut self.admin().await)
            .await
            .expect("CONFIG SET");
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `CLIENT KILL TYPE normal SKIPME yes` sent on `admin`: cuts every client connection but
/// `admin` (a private server has no other users); how many were cut. A test that kills
/// repeatedly keeps one `admin`, so that an earlier admin connection still closing is not
/// counted.
pub async fn kill_clients(admin: &mut redis::aio::MultiplexedConnection) -> u64 {
    redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
        .query_async(admin)
        .await
        .expect("CLIENT KILL")
}
