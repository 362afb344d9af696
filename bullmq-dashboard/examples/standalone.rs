//! The dashboard on its own: every queue of one store, served on a local address.
//!
//! ```text
//! cargo run -p bullmq-dashboard --example standalone -- \
//!     --listen 127.0.0.1:3000 --url redis://127.0.0.1:6379 [--prefix bull] [--schema bullmq] [--read-only]
//! ```
//!
//! Without `--read-only` anyone who reaches the address may act on the queues: listen on a
//! loopback address, or put it behind something that authenticates.

use bullmq_dashboard::{Access, Connection, Dashboard};

struct Args {
    listen: String,
    url: String,
    prefix: Option<String>,
    schema: Option<String>,
    read_only: bool,
}

const USAGE: &str =
    "usage: standalone --listen HOST:PORT --url URL [--prefix P] [--schema S] [--read-only]";

fn args() -> Result<Args, String> {
    let mut listen = None;
    let mut url = None;
    let mut prefix = None;
    let mut schema = None;
    let mut read_only = false;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value; {USAGE}"));
        match arg.as_str() {
            "--listen" => listen = Some(value("--listen")?),
            "--url" => url = Some(value("--url")?),
            "--prefix" => prefix = Some(value("--prefix")?),
            "--schema" => schema = Some(value("--schema")?),
            "--read-only" => read_only = true,
            other => return Err(format!("unknown argument {other:?}; {USAGE}")),
        }
    }
    Ok(Args {
        listen: listen.ok_or(format!("--listen is missing; {USAGE}"))?,
        url: url.ok_or(format!("--url is missing; {USAGE}"))?,
        prefix,
        schema,
        read_only,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let mut connection = Connection::url(args.url.clone());
    if let Some(prefix) = args.prefix {
        connection = connection.prefix(prefix);
    }
    if let Some(schema) = args.schema {
        connection = connection.schema(schema);
    }
    let dashboard = Dashboard::builder()
        .connection("main", connection)
        .authorize(|_, _, _| Access::Full)
        .read_only(args.read_only)
        .build()?;
    let listener = tokio::net::TcpListener::bind(&args.listen).await?;
    println!(
        "dashboard for {} on http://{}{}",
        bullmq::redact_url(&args.url),
        listener.local_addr()?,
        if args.read_only { " (read-only)" } else { "" }
    );
    axum::serve(listener, dashboard).await?;
    Ok(())
}
