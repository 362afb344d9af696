//! Shared helpers for the integration tests: service URLs with clear messages when a service is
//! missing, unique prefixes, running the pinned Node.js scripts, and the test PostgreSQL
//! ([`postgres`]).

#![allow(dead_code, unreachable_pub)]

pub mod corpus;
#[cfg(feature = "flow")]
pub mod flows;
pub mod pg_cluster;
pub mod postgres;
pub mod proxy;
pub mod scheduled;
pub mod wait;
pub mod workspace_bin;

use std::path::PathBuf;
use std::process::Command;

/// The Redis the tests use: `REDIS_URL`, else the local default.
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A connection to the test Redis, or a panic that says how to get one.
pub async fn redis() -> redis::aio::MultiplexedConnection {
    let url = redis_url();
    let client = redis::Client::open(url.as_str())
        .unwrap_or_else(|e| panic!("REDIS_URL {url:?} is not a valid Redis URL: {e}"));
    client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot reach Redis at {url} ({e}). Start one (`redis-server --port 6379`) \
             or point REDIS_URL at a server you may write to."
            )
        })
}

/// Milliseconds since the Unix epoch, as job timestamps count them.
pub fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_millis(),
    )
    .expect("milliseconds fit in u64")
}

/// The code of a script refusal, or a panic naming what came instead.
pub fn script_code(err: &bullmq::Error) -> bullmq::ScriptErrorCode {
    match err {
        bullmq::Error::Script(e) => e.code,
        other => panic!("expected a script refusal, got {other}"),
    }
}

/// A lock token.
pub fn token(t: &str) -> bullmq::backend::LockToken {
    bullmq::backend::LockToken::new(t)
}

/// What every flow test's processor does, in Rust on each store and in Node
/// (`tests/node/flow-work.mjs`): a job whose name starts with `fail` fails with `boom <name>`;
/// any other returns its name with its children's values and ignored failures.
pub async fn standard_flow_processor<B: bullmq::backend::Backend>(
    job: bullmq::ActiveJob<B>,
    _: bullmq::CancellationToken,
) -> bullmq::ProcessResult {
    if job.name.starts_with("fail") {
        return Err(bullmq::JobError::failed(format!("boom {}", job.name)));
    }
    let children = job.get_children_values().await?;
    let ignored = job.get_ignored_children_failures().await?;
    Ok(serde_json::json!({"name": job.name, "children": children, "ignored": ignored}))
}

/// A key prefix no other test uses.
pub fn unique_prefix() -> String {
    format!("bullmq-test-{}", uuid::Uuid::new_v4().simple())
}

/// The folder of the pinned Node.js helpers.
pub fn node_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("node")
}

/// Runs `node <script>` in `tests/node` with `env`, returning its stdout; panics with what to
/// do when Node.js or the pinned packages are missing, or the script fails.
pub fn run_node(script: &str, env: &[(&str, &str)]) -> String {
    run_node_args(&[script], env)
}

/// Runs `node <args…>` in `tests/node`; see [`run_node`].
pub fn run_node_args(args: &[&str], env: &[(&str, &str)]) -> String {
    let script = args.first().copied().unwrap_or_default();
    let dir = node_dir();
    assert!(
        dir.join("node_modules").join("bullmq").exists(),
        "the pinned Node.js packages are not installed: run `npm ci --prefix {}` (needs Node.js 20 and npm)",
        dir.display()
    );
    let mut cmd = Command::new("node");
    cmd.args(args)
        .current_dir(&dir)
        .env("REDIS_URL", redis_url());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run `node` ({e}): install Node.js 20 and npm to run the interop tests")
    });
    assert!(
        out.status.success(),
        "node {script} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("node output is UTF-8")
}

/// Deletes every key under a prefix when dropped, so a test cleans up even when it fails.
pub struct PrefixGuard(pub String);

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(redis_url().as_str()) else {
            return;
        };
        let Ok(mut con) = client.get_connection() else {
            return;
        };
        let pattern = format!("{}:*", self.0);
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(&pattern)
            .query(&mut con)
            .unwrap_or_default();
        for chunk in keys.chunks(500) {
            let _: redis::RedisResult<()> = redis::cmd("DEL").arg(chunk).query(&mut con);
        }
    }
}

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

/// A loopback port nothing listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind a free port");
    listener.local_addr().expect("local address").port()
}

/// Runs `openssl args…` in `dir`; panics with its output when it fails.
pub fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `openssl` ({e}): install OpenSSL"));
    assert!(
        out.status.success(),
        "openssl {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ca.crt`/`ca.key` and a CA-signed `server.crt`/`server.key` for `localhost` and
/// `127.0.0.1`, made with the `openssl` command.
pub fn make_test_certificates(dir: &std::path::Path) {
    let run = |args: &[&str]| openssl(dir, args);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write server.ext");
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "1",
        "-subj",
        "/CN=bullmq test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "1",
        "-extfile",
        "server.ext",
    ]);
}
