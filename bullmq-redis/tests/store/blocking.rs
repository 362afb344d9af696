//! Only what is Redis-specific; the shared cases are the conformance suite's `blocking.rs`.
//!
//! `Blocking` on the real Redis: `BZPOPMIN` on the marker key, its timeout, and interrupting it.

use crate::support::readers as support;

use std::time::Duration;

use bullmq_core::JobOptions;
use bullmq_core::backend::{Blocking, ClientRole, Lifecycle, Marker};
use support::{Ctx, blocked_in, clients_named};

fn worker(name: &str) -> ClientRole {
    ClientRole::Worker {
        name: Some(name.to_owned()),
    }
}

#[tokio::test]
async fn wait_for_job_pops_the_lowest_marker() {
    let ctx = Ctx::new().await;
    ctx.exec(
        "ZADD",
        &[
            &ctx.key("marker"),
            "1700000005000",
            "1",
            "1700000009000",
            "2",
        ],
    );
    let marker = ctx
        .backend
        .wait_for_job(Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(
        marker,
        Some(Marker {
            member: "1".to_owned(),
            score: 1_700_000_005_000
        })
    );
    let left: Vec<String> = ctx.cmd(redis::cmd("ZRANGE").arg(ctx.key("marker")).arg(0).arg(-1));
    assert_eq!(left, ["2"]);
}

#[tokio::test]
async fn adding_a_job_wakes_a_waiting_worker() {
    let ctx = Ctx::new().await;
    let b = ctx.backend.clone();
    b.set_client_role(worker("adder")).await.unwrap();
    let waiting = support::spawn_wait(&b, Duration::from_secs(10));
    blocked_in(&b.client_name(&worker("adder")), "bzpopmin").await;
    ctx.add(1, JobOptions::new()).await;
    support::woken_by_an_add(waiting, "the marker wakes the wait").await;
}

#[tokio::test]
async fn disconnect_blocking_ends_a_long_wait_at_once() {
    let ctx = Ctx::new().await;
    let b = ctx.backend.clone();
    b.set_client_role(worker("leaving")).await.unwrap();
    let name = b.client_name(&worker("leaving"));
    let waiting = support::spawn_wait(&b, Duration::from_secs(10));
    blocked_in(&name, "bzpopmin").await;

    b.disconnect_blocking(true).await.unwrap();
    // Well before the wait's own 10 s: it was ended, not run out. (A liveness bound.)
    support::interrupted(
        waiting,
        Duration::from_secs(5),
        "the wait returns once disconnected",
    )
    .await;
    // The socket is closed, so Redis no longer holds the BZPOPMIN.
    support::gone(&name, "the blocking connection").await;
    assert!(!b.is_closing());

    // Reconnected (and named again), the next wait works.
    b.reconnect_blocking().await.unwrap();
    assert_eq!(clients_named(&name).await.len(), 1);
    ctx.exec("ZADD", &[&ctx.key("marker"), "0", "0"]);
    let marker = b.wait_for_job(Duration::from_secs(1)).await.unwrap();
    assert_eq!(marker.map(|m| m.member).as_deref(), Some("0"));
}
