//! Transactional enqueue on PostgreSQL: the job is added inside your own transaction, so it
//! exists only if your writes commit with it, and never after a rollback.
//!
//! `cargo run --example pg_transaction --features postgres` (PostgreSQL at `DATABASE_URL`).

use std::error::Error;

use bullmq::AddInTransaction as _;
use bullmq::postgres::sqlx::{self, Connection as _, PgConnection};
use bullmq::prelude::*;

#[path = "support/env.rs"]
mod env;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let queue = Queue::from_backend(env::postgres("pg-transaction").await?)?;
    let url = env::url("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test");
    let mut conn = PgConnection::connect(&url).await?;
    sqlx::query("CREATE TEMP TABLE orders (id int PRIMARY KEY)")
        .execute(&mut conn)
        .await?;

    for (order, commit) in [(1, false), (2, true)] {
        let mut tx = conn.begin().await?;
        sqlx::query("INSERT INTO orders VALUES ($1)")
            .bind(order)
            .execute(&mut *tx)
            .await?;
        let job = queue
            .add_in(&mut tx, "ship", &order, JobOptions::new())
            .await?;
        let seen_outside = queue.get_job(&job.id).await?.is_some();
        if commit {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        let stored = queue.get_job(&job.id).await?.is_some();
        println!(
            "order {order}: {}, job visible before the end: {seen_outside}, after: {stored}",
            if commit { "committed" } else { "rolled back" }
        );
    }
    let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM orders")
        .fetch_one(&mut conn)
        .await?;
    println!(
        "orders stored: {orders}, jobs waiting: {}",
        queue.count().await?
    );
    Ok(())
}

// Output:
// order 1: rolled back, job visible before the end: false, after: false
// order 2: committed, job visible before the end: false, after: true
// orders stored: 1, jobs waiting: 1
