//! Upstream's PostgreSQL SQL, embedded at build time.
//!
//! `build.rs` reads the SQL the pinned `bullmq` npm package inlines into
//! `dist/cjs/postgres/sql-scripts.js`, together with the migration ledger of
//! `dist/cjs/postgres/migrations/index.js`, and emits [`commands`] (one
//! constant per command file, e.g. [`commands::ADD_JOB`] for `add_job.sql`)
//! and [`migrations::ALL`]. Code that runs a command names its constant, so a
//! command renamed or dropped upstream becomes a compile error at the next pin
//! bump. The text is verbatim: it holds no schema name, the connection's
//! `search_path` selects the schema.

/// One runtime SQL command of upstream's PostgreSQL backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlCommand {
    /// The command name: upstream's file name without `.sql`, e.g. `add_job`.
    pub name: &'static str,
    /// The SQL, verbatim; parameters are `$1..$n` as its header comment documents.
    pub text: &'static str,
}

/// One schema migration of upstream's PostgreSQL backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Migration {
    /// The schema version this migration produces (1, 2, …).
    pub version: i32,
    /// Its name in the migration ledger, e.g. `0001_schema`.
    pub name: &'static str,
    /// The oldest client major version that works with the resulting schema.
    pub min_client_version: i32,
    /// The SQL, verbatim.
    pub text: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/sql.rs"));
