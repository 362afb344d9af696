//! `dashboard --listen HOST:PORT`: the web dashboard (`bullmq-dashboard`) over every queue of
//! the store, served until ctrl-c.

use bullmq_dashboard::{Access, Connection, Dashboard};

use crate::cli::{Cli, DashboardArgs};
use crate::context::Ctx;
use crate::fail::{Failure, cause};
use crate::store::url_of;

/// What the dashboard serves: the store as the command line names it, and the access.
pub(crate) struct Served {
    url: Option<String>,
    prefix: Option<String>,
    schema: Option<String>,
    read_only: bool,
}

impl Served {
    /// The store and mode the command line names (the URL was checked by `Store::from_cli`).
    pub(crate) fn of(cli: &Cli, read_only: bool) -> Self {
        Self {
            url: url_of(cli),
            prefix: cli.prefix.clone(),
            schema: cli.schema.clone(),
            read_only,
        }
    }
}

/// Serves the dashboard on `args.listen` until ctrl-c.
pub(crate) async fn run(ctx: &Ctx, args: &DashboardArgs, served: Served) -> Result<(), Failure> {
    let Some(url) = served.url else {
        return Err(Failure::usage("no store to serve: pass --url"));
    };
    let mut connection = Connection::url(url);
    if let Some(prefix) = served.prefix {
        connection = connection.prefix(prefix);
    }
    if let Some(schema) = served.schema {
        connection = connection.schema(schema);
    }
    let dashboard = Dashboard::builder()
        .connection("main", connection)
        .authorize(|_, _, _| Access::Full)
        .read_only(served.read_only)
        .build()
        .map_err(|e| Failure::usage(format!("cannot serve the dashboard: {}", cause(&e))))?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| {
            Failure::usage(format!(
                "cannot listen on {:?}: {e}; pass a free local address, e.g. --listen 127.0.0.1:3000",
                args.listen
            ))
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::failed(format!("cannot read the listening address: {e}")))?;
    if !addr.ip().is_loopback() && !served.read_only {
        eprintln!(
            "warning: {addr} is not a loopback address and the dashboard grants full access: \
             put it behind something that authenticates, or pass --read-only"
        );
    }
    println!(
        "dashboard for {} on http://{addr}/{}",
        ctx.store.target(),
        if served.read_only { " (read-only)" } else { "" }
    );
    axum::serve(listener, dashboard)
        .with_graceful_shutdown(async {
            // No handler for ctrl-c means stopping at once, as before it was installed.
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| Failure::failed(format!("the dashboard stopped: {e}")))
}
