//! The fence of a pool whose primary the sentinels named: the switch count it was found
//! under. Once a `+switch-master` moves the count on, nothing more is written on the pool's
//! connections: a call about to write (on a direct connection, or the pipelined one's next
//! batch) fails instead with a refusal that nothing was sent, and the route retries it on the
//! primary it asks for anew. Writes the old primary accepts after the switch are lost when the
//! sentinels turn it into a replica.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::RedisResult;

use super::sentinel::Switches;

/// See the module.
pub(super) struct Fence {
    switches: Arc<Switches>,
    /// The switch count under which the pool's primary was last confirmed.
    valid_for: AtomicU64,
}

impl Fence {
    /// A fence for a primary confirmed under switch count `epoch`.
    pub(super) fn new(switches: Arc<Switches>, epoch: u64) -> Self {
        Self {
            switches,
            valid_for: AtomicU64::new(epoch),
        }
    }

    /// The primary was confirmed again under `epoch` (the count moved on without a switch:
    /// the sentinels' subscription was re-established, or the same node was named).
    pub(super) fn renew(&self, epoch: u64) {
        self.valid_for.store(epoch, Ordering::Release);
    }

    /// `Ok` while no switch was announced since the primary was confirmed; else the refusal
    /// to send.
    pub(super) fn check(&self) -> RedisResult<()> {
        if self.switches.epoch.load(Ordering::Acquire) == self.valid_for.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(switched())
        }
    }
}

/// The refusal of a call that was not sent because the primary was switched: a `READONLY`,
/// which the route retries on the new primary.
pub(super) fn switched() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly),
        "READONLY",
        "the sentinels switched the primary: the call was not sent to the old one".to_owned(),
    ))
}
