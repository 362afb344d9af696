//! What the servers of a sentinel failover saw, as they saw it: every command the old
//! primary ran (`MONITOR`), and the moment the replica became a primary (`ROLE`). The
//! failover tests compare them with when the clients heard of the switch and with what the
//! clients were told was written.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Commands that are not the clients' data calls: the sentinels' and the replication's own,
/// and the handshakes of any connection.
const NOT_DATA: [&str; 19] = [
    "PING",
    "INFO",
    "PUBLISH",
    "SUBSCRIBE",
    "CLIENT",
    "ROLE",
    "REPLICAOF",
    "SLAVEOF",
    "CONFIG",
    "MULTI",
    "EXEC",
    "HELLO",
    "AUTH",
    "SELECT",
    "REPLCONF",
    "PSYNC",
    "SYNC",
    "COMMAND",
    "QUIT",
];

/// One command a server ran: when (its clock), and its name.
#[derive(Debug, Clone)]
pub struct Ran {
    pub at: SystemTime,
    pub command: String,
}

/// The data commands a server runs, recorded until it drops the `MONITOR` connection (the
/// sentinels kill every client of a primary they demote).
pub struct Monitor {
    ran: Arc<Mutex<Vec<Ran>>>,
    reader: Option<JoinHandle<()>>,
}

impl Monitor {
    /// Starts recording on the server at `port`.
    pub fn start(port: u16) -> Self {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.write_all(b"MONITOR\r\n").unwrap();
        let mut lines = BufReader::new(stream);
        let mut ok = String::new();
        lines.read_line(&mut ok).unwrap();
        assert_eq!(ok.trim(), "+OK", "MONITOR");
        let ran: Arc<Mutex<Vec<Ran>>> = Arc::default();
        let sink = Arc::clone(&ran);
        let reader = std::thread::spawn(move || {
            for line in lines.lines() {
                let Ok(line) = line else { break };
                if let Some(ran) = parse(&line) {
                    sink.lock().unwrap().push(ran);
                }
            }
        });
        Self {
            ran,
            reader: Some(reader),
        }
    }

    /// Waits until the server dropped the connection; then every command it ran is here.
    pub fn finish(mut self) -> Vec<Ran> {
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        std::mem::take(&mut *self.ran.lock().unwrap())
    }
}

/// `+1733100000.123456 [0 127.0.0.1:54321] "EVALSHA" …`: a client's data command; `None` for
/// the others and for the commands a script ran (`[0 lua]`), counted with their script.
fn parse(line: &str) -> Option<Ran> {
    let line = line.strip_prefix('+')?;
    let (stamp, rest) = line.split_once(' ')?;
    let (source, args) = rest.split_once("] ")?;
    if source.ends_with("lua") {
        return None;
    }
    let command = args.split('"').nth(1)?.to_ascii_uppercase();
    if NOT_DATA.contains(&command.as_str()) {
        return None;
    }
    let seconds: f64 = stamp.parse().ok()?;
    Some(Ran {
        at: UNIX_EPOCH + Duration::from_secs_f64(seconds),
        command,
    })
}

/// Polls the role of the server at `port` until it says it is a primary; returns when it
/// first did (within the 5 ms between two polls).
pub fn promoted_at(port: u16) -> JoinHandle<SystemTime> {
    std::thread::spawn(move || {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        let mut con = None;
        loop {
            // The sentinels drop the clients of the replica they promote: connect again.
            if con.is_none() {
                con = client.get_connection().ok();
            }
            if let Some(c) = con.as_mut() {
                match redis::cmd("ROLE").query::<redis::Value>(c) {
                    Ok(redis::Value::Array(parts)) if matches!(parts.first(), Some(redis::Value::BulkString(b)) if b == b"master") =>
                    {
                        return SystemTime::now();
                    }
                    Ok(_) => {}
                    Err(_) => con = None,
                }
            }
            // Polls the server's own report; the precision of the moment measured.
            #[allow(clippy::disallowed_methods)]
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

/// `a - b` in milliseconds, negative when `a` is earlier.
pub fn millis_between(a: SystemTime, b: SystemTime) -> i64 {
    match a.duration_since(b) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}
