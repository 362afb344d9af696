//! A web dashboard for bullmq queues on Redis and PostgreSQL, side by side: an
//! [`axum::Router`] a service nests under any path.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use bullmq_dashboard::{Access, Connection, Dashboard};
//!
//! let dashboard = Dashboard::builder()
//!     .connection("main", Connection::url("redis://127.0.0.1:6379"))
//!     .connection("billing", Connection::url("postgres://postgres@127.0.0.1/app"))
//!     // Decide per request, connection and queue; here: admins act, everyone else reads.
//!     .authorize(|parts, _connection, _queue| {
//!         match parts.headers.get("x-role").and_then(|v| v.to_str().ok()) {
//!             Some("admin") => Access::Full,
//!             Some(_) => Access::ReadOnly,
//!             None => Access::None,
//!         }
//!     })
//!     .build()?;
//! let app = axum::Router::new().nest("/admin/queues", dashboard);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! Every page is server-rendered HTML, readable without JavaScript; a small script embedded
//! in the binary updates the counts live (server-sent events, from a poll of the store every
//! second). Every page costs a number of store calls bounded by its page size, never by the
//! size of a queue. See `docs/guides/dashboard.md` for what is protected and how.
#![forbid(unsafe_code)]

mod access;
mod actions;
mod builder;
mod bulk_action;
mod chart;
mod csrf;
mod error;
mod fields;
mod headers;
mod live;
mod pages;
mod payload;
mod queue_route;
mod request;
mod router;
mod runs;
mod search;
mod state;
mod urls;

pub use access::Access;
pub use builder::{BuildError, Connection, Dashboard, DashboardBuilder};
pub use csrf::CsrfRefusal;
pub use error::DashboardError;
