//! The event reader's horizon: the id up to which no event can appear any more.
//!
//! Event ids come from one sequence (`event_seq`, shared by every queue of the schema), taken
//! when a transaction inserts its event, not when it commits; two transactions can commit in
//! the other order than their ids. A reader that moves its cursor past the later id while the
//! earlier is still uncommitted never sees the earlier event: upstream's reader loses it. And
//! since every queue takes ids from the one sequence, a queue's ids are full of holes that
//! mean nothing, so the holes in a read cannot tell a missing event from another queue's.
//!
//! The horizon comes from the server's state instead:
//! 1. read the sequence's last value, `high`: every id up to it has been handed out;
//! 2. then list the transactions holding `RowExclusiveLock` on the `event` table. A
//!    transaction that took an id up to `high` and has not ended is among them: it locked the
//!    table before it took the id (the lock comes with planning the `INSERT`, the id with
//!    executing it) and keeps the lock until it ends;
//! 3. wait until each of them has let go of the table. PostgreSQL makes a commit visible
//!    before it releases the transaction's locks, so from then on every event up to `high`
//!    that will ever exist is visible, and `high` is final.
//!
//! A rolled-back transaction leaves a hole for good; it ends like any other, and the wait
//! with it. Only transactions that write events are waited for (bullmq's functions, the
//! caller's transactions that enqueue jobs), not unrelated long ones. One that keeps the table
//! longer than the hold maximum is given up on, with a warning: the stream moves on, and its
//! events, should it commit them, are not delivered to the readers already past them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bullmq_core::Result;
use sqlx::PgPool;
use sqlx::Row as _;
use tokio::time::Instant;

use crate::backend::sql_error;

/// The sequence's high-water mark, then the transactions writing to `event` (other than
/// this session). The lock list is a subquery correlated to the sequence's row, so it is read
/// after it: the order the argument above needs.
const PROBE: &str = "SELECT s.high,
       ARRAY(SELECT DISTINCT l.virtualtransaction
               FROM pg_locks l
              WHERE s.high IS NOT NULL
                AND l.locktype = 'relation'
                AND l.database = (SELECT oid FROM pg_database
                                   WHERE datname = current_database())
                AND l.relation = 'event'::regclass
                AND l.mode = 'RowExclusiveLock'
                AND l.pid IS DISTINCT FROM pg_backend_pid()) AS holders
  FROM (SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END AS high
          FROM event_seq) s";

/// Which of the given transactions still write to `event`.
const STILL_HOLDING: &str = "SELECT ARRAY(SELECT DISTINCT l.virtualtransaction
               FROM pg_locks l
              WHERE l.locktype = 'relation'
                AND l.database = (SELECT oid FROM pg_database
                                   WHERE datname = current_database())
                AND l.relation = 'event'::regclass
                AND l.mode = 'RowExclusiveLock'
                AND l.virtualtransaction = ANY($1)) AS holders";

/// The first pause between two looks at the writers; it doubles up to [`PAUSE_MAX`].
const PAUSE_MIN: Duration = Duration::from_millis(1);
/// The longest pause between two looks.
const PAUSE_MAX: Duration = Duration::from_millis(20);

/// A writer seen holding the `event` table.
#[derive(Debug, Clone, Copy)]
struct Seen {
    since: Instant,
    given_up: bool,
}

/// The horizon, and the writers seen, for the hold maximum.
#[derive(Debug, Default)]
pub(crate) struct Horizon {
    /// Every event id up to this one is final (and visible if committed).
    safe: AtomicI64,
    /// When each writer was first seen (by virtual transaction id, unique over time).
    seen: Mutex<HashMap<String, Seen>>,
}

impl Horizon {
    /// The horizon as far as known.
    pub(crate) fn safe(&self) -> i64 {
        self.safe.load(Ordering::SeqCst)
    }

    /// Establishes a new horizon (see the module): returns it once the writers in flight have
    /// ended, `None` when `deadline` came first (at least one look is taken whatever the
    /// deadline). Cancel-safe.
    pub(crate) async fn advance(
        &self,
        pool: &PgPool,
        deadline: Instant,
        hold_max: Duration,
    ) -> Result<Option<i64>> {
        const CONTEXT: &str = "read the event horizon";
        let row = sqlx::query(PROBE)
            .fetch_one(pool)
            .await
            .map_err(sql_error(CONTEXT))?;
        let high: i64 = row.try_get("high").map_err(sql_error(CONTEXT))?;
        let holders: Vec<String> = row.try_get("holders").map_err(sql_error(CONTEXT))?;
        let mut holders = self.blocking(holders, true, hold_max);
        let mut pause = PAUSE_MIN;
        loop {
            if holders.is_empty() {
                self.safe.fetch_max(high, Ordering::SeqCst);
                return Ok(Some(high));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(pause.min(deadline - now)).await;
            pause = (pause * 2).min(PAUSE_MAX);
            let row = sqlx::query(STILL_HOLDING)
                .bind(&holders)
                .fetch_one(pool)
                .await
                .map_err(sql_error(CONTEXT))?;
            let still: Vec<String> = row.try_get("holders").map_err(sql_error(CONTEXT))?;
            holders = self.blocking(still, false, hold_max);
        }
    }

    /// The writers still to wait for, after giving up on those held past `hold_max`; with
    /// `complete` (the full list), forgets the writers no longer in it.
    fn blocking(&self, holders: Vec<String>, complete: bool, hold_max: Duration) -> Vec<String> {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        still_blocking(holders, &mut seen, Instant::now(), hold_max, complete)
    }
}

/// [`Horizon::blocking`] on its own state, for tests.
fn still_blocking(
    holders: Vec<String>,
    seen: &mut HashMap<String, Seen>,
    now: Instant,
    hold_max: Duration,
    complete: bool,
) -> Vec<String> {
    if complete {
        seen.retain(|vxid, _| holders.contains(vxid));
    }
    holders
        .into_iter()
        .filter(|vxid| {
            let entry = seen.entry(vxid.clone()).or_insert(Seen {
                since: now,
                given_up: false,
            });
            if now.saturating_duration_since(entry.since) < hold_max {
                return true;
            }
            if !entry.given_up {
                entry.given_up = true;
                tracing::warn!(
                    transaction = %vxid,
                    held_for = ?hold_max,
                    "bullmq: a transaction has been writing events for too long; \
                     reading on past it, its events will be missed if it commits them"
                );
            }
            false
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::still_blocking;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn writers_are_waited_for_up_to_the_hold_maximum() {
        let max = Duration::from_secs(30);
        let mut seen = HashMap::new();
        let t0 = Instant::now();
        let left = still_blocking(names(&["3/7", "4/9"]), &mut seen, t0, max, true);
        assert_eq!(left, names(&["3/7", "4/9"]));
        // 4/9 ended; 3/7 is still there a while later, and given up on past the maximum.
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(
            still_blocking(names(&["3/7"]), &mut seen, t1, max, true),
            names(&["3/7"])
        );
        assert!(!seen.contains_key("4/9"), "ended writers are forgotten");
        let t2 = t0 + Duration::from_secs(31);
        assert!(
            still_blocking(names(&["3/7", "5/1"]), &mut seen, t2, max, false) == names(&["5/1"])
        );
        // A partial list forgets nothing; a new writer's clock starts when first seen.
        assert!(seen.contains_key("3/7"));
        let t3 = t2 + Duration::from_secs(29);
        assert_eq!(
            still_blocking(names(&["5/1"]), &mut seen, t3, max, true),
            names(&["5/1"])
        );
    }
}
