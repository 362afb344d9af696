//! A throwaway PostgreSQL cluster for tests that restart, crash or reconfigure a server
//! (`initdb` + `pg_ctl` in a temporary directory, on a free port, as the `postgres` user when
//! the tests run as root); the shared cluster is never touched.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::free_port;

/// A throwaway cluster: `initdb` in a temporary directory, on a free port, trust
/// authentication; stopped (immediately) and deleted on drop.
pub struct Cluster {
    /// The port it listens on.
    pub port: u16,
    bin: PathBuf,
    /// Its folder (the data directory is `data` in it).
    pub dir: PathBuf,
    /// Run the tools as `postgres` (they refuse to run as root).
    as_postgres: bool,
}

/// The newest installed PostgreSQL's `bin` directory that has `initdb`.
fn postgres_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    if let Some((_, bin)) = found.pop() {
        return Some(bin);
    }
    // Elsewhere (not Debian): on the PATH.
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let bin = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    bin.join("initdb").exists().then_some(bin)
}

impl Cluster {
    /// Starts a cluster, or says why not: `None` (the test is skipped with a message) only
    /// when PostgreSQL's server tools are not installed and `CI` is not set.
    pub fn start() -> Option<Self> {
        let cluster = Self::init()?;
        cluster.pg_ctl("start");
        Some(cluster)
    }

    /// `initdb` only: set it up ([`append_conf`](Self::append_conf),
    /// [`write_data_file`](Self::write_data_file)) and then [`pg_ctl`](Self::pg_ctl)`("start")`.
    pub fn init() -> Option<Self> {
        let Some(bin) = postgres_bin() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "initdb is not installed (apt-get install postgresql): the private-cluster \
                 fault tests cannot run"
            );
            eprintln!(
                "SKIPPED: initdb is not installed; the private-cluster fault test did not run"
            );
            return None;
        };
        let as_postgres = std::fs::metadata("/proc/self")
            .map(|m| m.uid() == 0)
            .unwrap_or(false);
        let dir = std::env::temp_dir().join(format!("bullmq-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&dir).unwrap();
        let port = free_port();
        let cluster = Self {
            bin,
            dir,
            port,
            as_postgres,
        };
        if as_postgres {
            cluster.run(
                Command::new("chown")
                    .args(["postgres:postgres"])
                    .arg(&cluster.dir),
            );
        }
        let data = cluster.data();
        cluster.tool(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        let conf = format!(
            "\nport = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
             fsync = off\nmax_connections = 60\nshared_buffers = 16MB\n",
            cluster.dir.display()
        );
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .unwrap();
        std::io::Write::write_all(&mut file, conf.as_bytes()).unwrap();
        Some(cluster)
    }

    /// Its data directory.
    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// `pg_ctl <action>`, waiting for it; `stop` is always `-m immediate`: a crash.
    pub fn pg_ctl(&self, action: &str) {
        let data = self.data();
        let log = self.dir.join("server.log");
        let mut args = vec![
            "-D",
            path_str(&data),
            "-l",
            path_str(&log),
            "-w",
            "-t",
            "60",
        ];
        if action == "stop" || action == "restart" {
            args.extend(["-m", "immediate"]);
        }
        args.push(action);
        self.tool("pg_ctl", &args);
    }

    /// Appends `text` to `postgresql.conf` (later settings win).
    pub fn append_conf(&self, text: &str) {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(self.data().join("postgresql.conf"))
            .unwrap();
        std::io::Write::write_all(&mut file, format!("\n{text}\n").as_bytes()).unwrap();
    }

    /// Writes `name` in the data directory, owned by the server's user, readable by it only
    /// (what the server demands of a private key).
    pub fn write_data_file(&self, name: &str, contents: &[u8]) {
        let path = self.data().join(name);
        std::fs::write(&path, contents).unwrap();
        self.run(Command::new("chmod").arg("600").arg(&path));
        if self.as_postgres {
            self.run(Command::new("chown").arg("postgres:postgres").arg(&path));
        }
    }

    fn tool(&self, name: &str, args: &[&str]) {
        let program = self.bin.join(name);
        let mut cmd = if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        };
        cmd.args(args);
        self.run(&mut cmd);
    }

    fn run(&self, cmd: &mut Command) {
        let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
        if !out.status.success() {
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            panic!(
                "{cmd:?} failed: {}\n{}\nserver log:\n{log}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.data();
        let program = self.bin.join("pg_ctl");
        let args = ["-D", path_str(&data), "-m", "immediate", "stop"];
        let _ = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(program)
                .args(args)
                .output()
        } else {
            Command::new(program).args(args).output()
        };
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `path` as text (temporary paths are UTF-8).
pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}
