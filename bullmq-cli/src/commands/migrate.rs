//! `migrate [--dry-run]` (PostgreSQL): the schema's pending migrations, shown, and applied
//! as the library applies them (one transaction, upstream's advisory lock).

use bullmq::postgres::sqlx::{self, Connection as _, PgConnection};
use bullmq::postgres::{DEFAULT_SCHEMA, MIGRATIONS, PostgresOptions, SchemaName};
use serde_json::{Value, json};

use crate::cli::{BulkArgs, MigrateArgs};
use crate::context::Ctx;
use crate::fail::{Failure, cause, fix_for};
use crate::{confirm, output};

pub(super) async fn run(ctx: &Ctx, args: &MigrateArgs) -> Result<(), Failure> {
    let url = ctx.store.url();
    if !url.to_ascii_lowercase().starts_with("postgres") {
        return Err(Failure::usage(
            "`migrate` is for PostgreSQL schemas: Redis has none (its scripts come with the \
             client); pass --url postgres://…",
        ));
    }
    let schema_text = ctx.store.schema().unwrap_or(DEFAULT_SCHEMA);
    let schema = SchemaName::new(schema_text).map_err(|e| {
        Failure::usage(format!(
            "--schema is invalid: {e}; pass a simple identifier such as bullmq"
        ))
    })?;
    let from = ledger_version(ctx, &schema).await?;
    let pending: Vec<Value> = MIGRATIONS
        .iter()
        .filter(|m| m.version > from)
        .map(|m| json!({"version": m.version, "name": m.name, "min_client_version": m.min_client_version}))
        .collect();
    let mut to = from;
    if !args.dry_run && !pending.is_empty() {
        let bulk = BulkArgs {
            dry_run: false,
            yes: args.yes,
            batch: 1,
            throttle_ms: 0,
        };
        confirm::confirm(
            &bulk,
            &format!(
                "apply {} migration(s) to schema {schema_text:?} on {}",
                pending.len(),
                ctx.store.target()
            ),
        )?;
        let options = PostgresOptions::new(url.to_owned()).schema(schema.clone());
        to = bullmq::postgres::migrate(&options).await.map_err(|e| {
            Failure::failed(format!(
                "cannot migrate schema {schema_text:?} on {}: {}; {}",
                ctx.store.target(),
                cause(&e),
                fix_for(&e)
            ))
        })?;
    }
    let item = json!({
        "command": "migrate",
        "schema": schema_text,
        "dry_run": args.dry_run,
        "from_version": from,
        "to_version": to,
        "pending": pending,
        "applied": if args.dry_run { 0 } else { pending.len() },
    });
    output::one(ctx.format, &item, || {
        let mut lines = Vec::new();
        if pending.is_empty() {
            lines.push(format!(
                "schema {schema_text:?} is up to date (version {from}): nothing to apply"
            ));
        } else {
            let mut table = output::table(&["VERSION", "MIGRATION", "MIN CLIENT"]);
            for m in &pending {
                table.add_row(vec![
                    m["version"].to_string(),
                    m["name"].as_str().unwrap_or_default().to_owned(),
                    m["min_client_version"].to_string(),
                ]);
            }
            lines.push(table.to_string());
            lines.push(if args.dry_run {
                format!(
                    "dry run: would apply {} migration(s) to schema {schema_text:?} (version {from} to {})",
                    pending.len(),
                    MIGRATIONS.last().map_or(from, |m| m.version)
                )
            } else {
                format!(
                    "applied {} migration(s) to schema {schema_text:?}: version {from} to {to}",
                    pending.len()
                )
            });
        }
        lines.join("\n")
    })
}

/// The version the schema's ledger records: 0 without a schema or a ledger.
async fn ledger_version(ctx: &Ctx, schema: &SchemaName) -> Result<i32, Failure> {
    let mut con = PgConnection::connect(ctx.store.url()).await.map_err(|e| {
        Failure::failed(format!(
            "cannot connect to {}: {}; check that the server runs and --url names it",
            ctx.store.target(),
            cause(&e)
        ))
    })?;
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'migration')",
    )
    .bind(schema.as_str())
    .fetch_one(&mut con)
    .await
    .map_err(|e| {
        Failure::failed(format!(
            "cannot read the ledger on {}: {}",
            ctx.store.target(),
            cause(&e)
        ))
    })?;
    let version = if exists {
        sqlx::query_scalar(&format!(
            "SELECT COALESCE(MAX(version), 0)::int FROM {}.migration",
            schema.quoted()
        ))
        .fetch_one(&mut con)
        .await
        .map_err(|e| {
            Failure::failed(format!(
                "cannot read the migration ledger of schema {:?} on {}: {}; check the role's \
                 grants on it",
                schema.as_str(),
                ctx.store.target(),
                cause(&e)
            ))
        })?
    } else {
        0
    };
    let _ = con.close().await;
    Ok(version)
}
