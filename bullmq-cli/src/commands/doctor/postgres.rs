//! `doctor` on PostgreSQL: the server, the schema's version and `min_client_version`, the
//! current role's grants on the schema, durability settings, clock skew.

use bullmq::postgres::sqlx::{self, Connection as _, PgConnection};
use bullmq::postgres::{
    DEFAULT_SCHEMA, MINIMUM_POSTGRES_VERSION, PostgresError, RECOMMENDED_POSTGRES_VERSION,
};

use bullmq::ConnectError;

use super::finding::{self, Finding};
use crate::context::Ctx;
use crate::fail::{Failure, cause};

/// A table privilege every role that adds or works needs.
const TABLE_PRIVILEGES: [&str; 4] = ["SELECT", "INSERT", "UPDATE", "DELETE"];

pub(super) async fn checks(ctx: &Ctx) -> Result<Vec<Finding>, Failure> {
    let schema = ctx.store.schema().unwrap_or(DEFAULT_SCHEMA).to_owned();
    let fail = |what: &str, e: &sqlx::Error| {
        Failure::failed(format!(
            "cannot {what} on {}: {}; check that the server runs, --url names it and the role \
             may connect",
            ctx.store.target(),
            cause(e)
        ))
    };
    let mut con = PgConnection::connect(ctx.store.url())
        .await
        .map_err(|e| fail("connect", &e))?;
    let mut findings = Vec::new();

    let (version_num, version, user): (String, String, String) = sqlx::query_as(
        "SELECT current_setting('server_version_num'), current_setting('server_version'), \
                current_user::text",
    )
    .fetch_one(&mut con)
    .await
    .map_err(|e| fail("read the server version", &e))?;
    let major = version_num.parse::<i32>().map_or(0, |n| n / 10_000);
    findings.push(if major < MINIMUM_POSTGRES_VERSION {
        Finding::problem(
            "server",
            format!("PostgreSQL {version}"),
            format!("upgrade to PostgreSQL {RECOMMENDED_POSTGRES_VERSION} or newer"),
        )
    } else if major < RECOMMENDED_POSTGRES_VERSION {
        Finding::note(
            "server",
            format!("PostgreSQL {version}"),
            format!("PostgreSQL {RECOMMENDED_POSTGRES_VERSION} or newer is recommended"),
        )
    } else {
        Finding::ok("server", format!("PostgreSQL {version}"))
    });

    findings.push(schema_version(ctx, &schema, &mut con).await);
    findings.push(
        grants(&schema, &user, &mut con)
            .await
            .map_err(|e| fail("read the grants", &e))?,
    );
    findings.push(
        durability(&mut con)
            .await
            .map_err(|e| fail("read the settings", &e))?,
    );

    let before = finding::now_ms();
    let server_ms: i64 =
        sqlx::query_scalar("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")
            .fetch_one(&mut con)
            .await
            .map_err(|e| fail("read the server's clock", &e))?;
    let after = finding::now_ms();
    findings.push(finding::clock(
        before,
        u64::try_from(server_ms).unwrap_or(0),
        after,
    ));
    let _ = con.close().await;
    Ok(findings)
}

/// The schema's ledger against what this client needs: the library's own check at connect.
async fn schema_version(ctx: &Ctx, schema: &str, con: &mut PgConnection) -> Finding {
    let ledger: Result<(i32, Option<i32>), sqlx::Error> = sqlx::query_as(&format!(
        "SELECT COALESCE(MAX(version), 0)::int, MAX(min_client_version)::int FROM {}.migration",
        quote(schema)
    ))
    .fetch_one(&mut *con)
    .await;
    // No ledger (or none readable): version 0, as the library counts it.
    let (version, min_client) = ledger.unwrap_or_default();
    let min_client = min_client.map_or_else(|| "none".to_owned(), |v| v.to_string());
    let found = format!("schema {schema:?} at version {version}, min_client_version {min_client}");
    let Err(failure) = ctx.store.connect("bullmq-cli").await else {
        return Finding::ok("schema", found);
    };
    let refusal = match &failure {
        ConnectError::Backend(bullmq::Error::Backend(e)) => {
            let e: &(dyn std::error::Error + 'static) = e.as_ref();
            e.downcast_ref::<PostgresError>()
        }
        _ => None,
    };
    match refusal {
        Some(PostgresError::SchemaMigrationRequired {
            current_version,
            required_version,
            ..
        }) => Finding::problem(
            "schema",
            format!(
                "schema {schema:?} at version {current_version}, this client needs \
                 {required_version} (min_client_version {min_client})"
            ),
            format!(
                "migrate it as the schema's owner: `bullmq migrate --schema {schema}` (or \
                 ConnectOptions::migrate, Node.js migrate: true)"
            ),
        ),
        Some(PostgresError::SchemaVersionMismatch {
            minimum_client_version,
            client_version,
            ..
        }) => Finding::problem(
            "schema",
            format!(
                "schema {schema:?} needs BullMQ {minimum_client_version} or newer \
                 (min_client_version), this client is {client_version}"
            ),
            "upgrade the clients of this schema; schemas are never downgraded",
        ),
        _ => Finding::problem(
            "schema",
            format!("{found}; the client refuses it: {}", cause(&failure)),
            "see the cause above",
        ),
    }
}

/// What the current role may do in the schema: use it, create in it (each queue's job-id
/// sequence), and read and write its tables.
async fn grants(schema: &str, user: &str, con: &mut PgConnection) -> Result<Finding, sqlx::Error> {
    let (exists, usage, create): (bool, bool, bool) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
                COALESCE((SELECT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = $1), false),
                COALESCE((SELECT has_schema_privilege(oid, 'CREATE') FROM pg_namespace WHERE nspname = $1), false)",
    )
    .bind(schema)
    .fetch_one(&mut *con)
    .await?;
    if !exists {
        return Ok(Finding::problem(
            "permissions",
            format!("schema {schema:?} does not exist"),
            format!("create and migrate it as its owner: `bullmq migrate --schema {schema}`"),
        ));
    }
    let mut missing = Vec::new();
    if !usage {
        missing.push("USAGE on the schema".to_owned());
    }
    if !create {
        missing.push("CREATE on the schema (each queue's job-id sequence)".to_owned());
    }
    let tables: Vec<(String, bool, bool, bool, bool)> = sqlx::query_as(
        "SELECT c.relname::text,
                has_table_privilege(c.oid, 'SELECT'), has_table_privilege(c.oid, 'INSERT'),
                has_table_privilege(c.oid, 'UPDATE'), has_table_privilege(c.oid, 'DELETE')
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')
          ORDER BY 1",
    )
    .bind(schema)
    .fetch_all(&mut *con)
    .await?;
    for (table, select, insert, update, delete) in &tables {
        let lacking: Vec<&str> = TABLE_PRIVILEGES
            .iter()
            .zip([select, insert, update, delete])
            .filter(|(_, has)| !**has)
            .map(|(p, _)| *p)
            .collect();
        if !lacking.is_empty() {
            missing.push(format!("{} on {table}", lacking.join(", ")));
        }
    }
    let functions: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = $1 AND NOT has_function_privilege(p.oid, 'EXECUTE')",
    )
    .bind(schema)
    .fetch_one(&mut *con)
    .await?;
    if functions > 0 {
        missing.push(format!("EXECUTE on {functions} function(s)"));
    }
    if missing.is_empty() {
        return Ok(Finding::ok(
            "permissions",
            format!(
                "role {user} may use schema {schema:?} and read and write its {} table(s)",
                tables.len()
            ),
        ));
    }
    let q = quote(schema);
    let role = quote(user);
    Ok(Finding::problem(
        "permissions",
        format!("role {user} lacks {}", missing.join("; ")),
        format!(
            "as the schema's owner: GRANT USAGE, CREATE ON SCHEMA {q} TO {role}; GRANT SELECT, \
             INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {q} TO {role}; GRANT USAGE, SELECT, \
             UPDATE ON ALL SEQUENCES IN SCHEMA {q} TO {role}; GRANT EXECUTE ON ALL FUNCTIONS IN \
             SCHEMA {q} TO {role} (docs/SECURITY.md)"
        ),
    ))
}

/// `fsync` and `synchronous_commit`: off, a crash can lose jobs already acknowledged.
async fn durability(con: &mut PgConnection) -> Result<Finding, sqlx::Error> {
    let (fsync, sync_commit): (String, String) =
        sqlx::query_as("SELECT current_setting('fsync'), current_setting('synchronous_commit')")
            .fetch_one(&mut *con)
            .await?;
    let found = format!("fsync {fsync}, synchronous_commit {sync_commit}");
    Ok(if fsync == "off" || sync_commit == "off" {
        Finding::note(
            "persistence",
            format!("{found}: a crash may lose jobs already acknowledged"),
            "turn fsync and synchronous_commit on where jobs must survive a crash",
        )
    } else {
        Finding::ok("persistence", found)
    })
}

/// An identifier, double-quoted as SQL writes it.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
