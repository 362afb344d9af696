//! Rows another runtime wrote oddly, handled around upstream's SQL (which we run verbatim).
//!
//! The counters upstream's functions increment (`attempts_started` on a claim, `attempts_made`
//! on a finish, a retry or a delay, `stalled_count` in the stalled check) are `integer`
//! columns: one written at the type's limit makes every such statement fail with `integer out
//! of range` (SQLSTATE 22003). The transaction is rolled back, so nothing is lost, but the
//! same statement fails again on every try: the fetch would stop at that job forever, and a
//! stalled check would never run again. Here the statement's failure is caught, the queue's
//! counters above [`COUNTER_CAP`] are capped, and the statement runs once more.
//!
//! Likewise the functions cast some options out of the `opts` jsonb (`failParentOnFailure`
//! and its siblings to `boolean` when a child fails, `attempts` to `integer`, …): an option
//! another runtime wrote as text that does not cast (`"abc"`) fails the finishing statement
//! (SQLSTATE 22P02) every time, so the job would never finish. The finishing job's options
//! that do not cast are removed (the functions then read their default, as Lua's `tonumber`
//! reads nil), and the statement runs once more.

use std::future::Future;

use bullmq_core::Result;
use sqlx::Row as _;

use super::{PostgresBackend, sql_error};
use crate::error::PostgresError;

/// The largest count left as it is: no job starts, fails or stalls a billion times, and what
/// is left above it leaves room for a billion more increments.
const COUNTER_CAP: i32 = 1_000_000_000;

/// SQLSTATE `numeric_value_out_of_range`.
const OUT_OF_RANGE: &str = "22003";

/// SQLSTATE `invalid_text_representation` (a failed cast of text).
const BAD_TEXT: &str = "22P02";

/// The SQLSTATE of a statement that failed, if `err` is one.
fn sqlstate(err: &bullmq_core::Error) -> Option<String> {
    match PostgresError::from_error(err) {
        Some(PostgresError::Query {
            source: sqlx::Error::Database(db),
            ..
        }) => db.code().map(std::borrow::Cow::into_owned),
        _ => None,
    }
}

/// The options upstream's functions cast, and the type each is cast to.
const CAST_OPTIONS: [(&str, Cast); 9] = [
    ("failParentOnFailure", Cast::Boolean),
    ("continueParentOnFailure", Cast::Boolean),
    ("ignoreDependencyOnFailure", Cast::Boolean),
    ("removeDependencyOnFailure", Cast::Boolean),
    ("lifo", Cast::Boolean),
    ("attempts", Cast::Integer),
    ("priority", Cast::Integer),
    ("delay", Cast::Bigint),
    ("timestamp", Cast::Bigint),
];

#[derive(Clone, Copy)]
enum Cast {
    Boolean,
    Integer,
    Bigint,
}

/// Whether PostgreSQL casts `opts ->> key` (the value's text) to `cast` without an error.
fn casts(value: &serde_json::Value, cast: Cast) -> bool {
    let text = match value {
        serde_json::Value::Null => return true,
        serde_json::Value::String(s) => s.trim().to_ascii_lowercase(),
        other => other.to_string(),
    };
    match cast {
        // `boolin`: these words and any unique prefix of them.
        Cast::Boolean => [
            "t", "tr", "tru", "true", "y", "ye", "yes", "on", "1", "f", "fa", "fal", "fals",
            "false", "n", "no", "of", "off", "0",
        ]
        .contains(&text.as_str()),
        Cast::Integer => text.trim_start_matches('+').parse::<i32>().is_ok(),
        Cast::Bigint => text.trim_start_matches('+').parse::<i64>().is_ok(),
    }
}

impl PostgresBackend {
    /// Runs `op` on job `id` (if it names one); when it fails on a counter at its limit or on
    /// an option that does not cast, repairs them (see the module) and runs it once more.
    pub(crate) async fn with_repairs<T, F, Fut>(&self, id: Option<&str>, op: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        match op().await {
            Err(err) => {
                let repaired = match (sqlstate(&err).as_deref(), id) {
                    (Some(OUT_OF_RANGE), _) => self.cap_counters().await? > 0,
                    (Some(BAD_TEXT), Some(id)) => self.drop_uncastable_options(id).await?,
                    _ => false,
                };
                if !repaired {
                    return Err(err);
                }
                op().await
            }
            ok => ok,
        }
    }

    /// Removes the options of job `id` that upstream's functions cannot cast; whether any was.
    async fn drop_uncastable_options(&self, id: &str) -> Result<bool> {
        const CONTEXT: &str = "remove job options that do not cast";
        let query = sqlx::query("SELECT opts FROM job WHERE queue = $1 AND id = $2")
            .bind(self.queue_name())
            .bind(id);
        let rows = self.rows(query, CONTEXT).await?;
        let opts = match rows.first() {
            Some(row) => row
                .try_get::<Option<serde_json::Value>, _>("opts")
                .map_err(sql_error(CONTEXT))?,
            None => None,
        };
        let Some(serde_json::Value::Object(map)) = opts else {
            return Ok(false);
        };
        let bad: Vec<&str> = CAST_OPTIONS
            .iter()
            .filter(|(key, cast)| map.get(*key).is_some_and(|v| !casts(v, *cast)))
            .map(|(key, _)| *key)
            .collect();
        if bad.is_empty() {
            return Ok(false);
        }
        tracing::warn!(
            queue = self.queue_name(),
            job = id,
            options = ?bad,
            "postgres: job options that upstream's functions cannot cast were removed"
        );
        let query =
            sqlx::query("UPDATE job SET opts = opts - $3::text[] WHERE queue = $1 AND id = $2")
                .bind(self.queue_name())
                .bind(id)
                .bind(&bad);
        self.execute(query, CONTEXT).await?;
        Ok(true)
    }

    /// Caps the counters of this queue's jobs at [`COUNTER_CAP`]; how many rows it changed.
    async fn cap_counters(&self) -> Result<u64> {
        const CONTEXT: &str = "cap job counters at their limit";
        let query = sqlx::query(
            "UPDATE job SET attempts_started = LEAST(attempts_started, $2), \
             attempts_made = LEAST(attempts_made, $2), stalled_count = LEAST(stalled_count, $2) \
             WHERE queue = $1 AND GREATEST(attempts_started, attempts_made, stalled_count) > $2",
        )
        .bind(self.queue_name())
        .bind(COUNTER_CAP);
        let capped = self.execute(query, CONTEXT).await?;
        if capped > 0 {
            tracing::warn!(
                queue = self.queue_name(),
                jobs = capped,
                cap = COUNTER_CAP,
                "postgres: job counters at the integer limit were capped so that upstream's \
                 functions can count them"
            );
        }
        Ok(capped)
    }
}
