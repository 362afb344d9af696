//! The worker's start on PostgreSQL: its first stalled check runs before its first fetch, as
//! upstream's `run` orders them, so a job it takes at start is never marked stalled by its own
//! check.

#![allow(clippy::unwrap_used)]

use bullmq::JobId;
use bullmq::postgres::sqlx::{self, Row as _};

use crate::support::postgres::{SchemaGuard, admin};
use crate::support::stall_order::assert_a_job_taken_at_start_is_not_marked_stalled;

#[tokio::test]
async fn a_job_taken_at_start_is_not_marked_stalled_by_the_first_check() {
    let schema = SchemaGuard::new("stallorder");
    let table = format!("\"{}\".job", schema.as_str());
    let connect = |queue: String| {
        let schema = &schema;
        async move { schema.backend(&queue).await }
    };
    let marked = |queue: String, id: JobId| {
        let table = table.clone();
        async move {
            sqlx::query(&format!(
                "SELECT stalled_marked FROM {table} WHERE queue = $1 AND id = $2"
            ))
            .bind(&queue)
            .bind(id.as_str())
            .fetch_one(&mut admin().await)
            .await
            .unwrap()
            .get(0)
        }
    };
    assert_a_job_taken_at_start_is_not_marked_stalled(connect, marked).await;
}
