//! The node's background work, as upstream's `Relay` runs it: the heartbeat (with the inbox
//! trim and the lag check), the sweep, the read loop, and recovery after a lost lease.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::endpoint::{Endpoint, RawMessage};
use super::{Inner, RelayEvent, RelayInboxEntry, lock};
use crate::backend::Backend;
use crate::{Error, Result};

/// How many entries one inbox read takes.
const BATCH: u32 = 100;

/// How many expired nodes one sweep removes.
const SWEEP_LIMIT: u32 = 100;

/// The pause after a failed read before the next one.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// The host name, for the node's info (`os.hostname()` upstream).
pub(crate) fn host_name() -> Option<String> {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

/// Starts the heartbeat and sweep timers and the read loop.
pub(crate) fn start<B: Backend>(inner: &Arc<Inner<B>>) {
    let beat = Arc::clone(inner);
    let heartbeat = tokio::spawn(async move {
        every(&beat, beat.o.heartbeat_interval, |i| async move {
            i.heartbeat(true).await
        })
        .await;
    });
    let sweeper = Arc::clone(inner);
    let sweep = tokio::spawn(async move {
        every(&sweeper, sweeper.o.sweep_interval, |i| async move {
            i.sweep().await
        })
        .await;
    });
    let reader = Arc::clone(inner);
    let read = tokio::spawn(async move { reader.read_loop().await });
    lock(&inner.tasks).extend([heartbeat, sweep, read]);
}

/// Runs `step` every `period` until the relay closes; a failed step is an error event.
async fn every<B, F, Fut>(inner: &Arc<Inner<B>>, period: Duration, step: F)
where
    B: Backend,
    F: Fn(Arc<Inner<B>>) -> Fut,
    Fut: Future<Output = Result<()>>,
{
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = inner.closing.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let outcome = tokio::select! {
            () = inner.closing.cancelled() => return,
            outcome = step(Arc::clone(inner)) => outcome,
        };
        if let Err(e) = outcome
            && !inner.closing.is_cancelled()
        {
            inner.emit_error(e);
        }
    }
}

impl<B: Backend> Inner<B> {
    /// Renews the lease; recovers when it ended (or a recovery is pending); with `trim`, then
    /// trims the inbox and checks the lag.
    pub(crate) async fn heartbeat(&self, trim: bool) -> Result<()> {
        if self.closing.is_cancelled() {
            return Ok(());
        }
        {
            let _one = self.heartbeat_lock.lock().await;
            let alive = self
                .store
                .relay_heartbeat(&self.o.node_id, self.o.lease)
                .await?;
            if (!alive || self.recovery_pending.load(Ordering::SeqCst))
                && !self.closing.is_cancelled()
            {
                self.recover().await?;
            }
        }
        if trim && !self.closing.is_cancelled() {
            self.check_backlog().await?;
        }
        Ok(())
    }

    /// Removes consumed entries, caps the inbox, and reports the lag past the threshold.
    async fn check_backlog(&self) -> Result<()> {
        if self.closing.is_cancelled() || self.batch_in_flight.load(Ordering::SeqCst) {
            return Ok(());
        }
        let _one = self.backlog_lock.lock().await;
        let cursor = lock(&self.cursor).clone();
        let backlog = self
            .store
            .relay_trim_inbox(&self.o.node_id, &cursor, self.o.inbox_max_length)
            .await?;
        if backlog >= self.o.lag_threshold {
            let _ = self.events.send(RelayEvent::Lag(backlog));
        }
        Ok(())
    }

    /// The lease ended or the node was swept: registers again and restores the
    /// subscriptions (retained messages are not delivered again). If it fails part way, the
    /// next heartbeat tries again.
    async fn recover(&self) -> Result<()> {
        self.recovery_pending.store(true, Ordering::SeqCst);
        self.registration.fetch_add(1, Ordering::SeqCst);
        self.register().await?;
        let mut renewed = Instant::now();
        let renew_every = self.o.lease / 3;
        let endpoints: Vec<(String, String, Arc<std::sync::atomic::AtomicBool>)> =
            lock(&self.endpoints)
                .iter()
                .map(|(id, e)| (id.clone(), e.pattern.clone(), Arc::clone(&e.active)))
                .collect();
        for (id, pattern, active) in endpoints {
            if self.closing.is_cancelled() {
                return Ok(());
            }
            // A long recovery must not let the new lease end under it.
            if renewed.elapsed() >= renew_every {
                if !self
                    .store
                    .relay_heartbeat(&self.o.node_id, self.o.lease)
                    .await?
                {
                    return Err(lease_lost());
                }
                renewed = Instant::now();
            }
            let endpoint = super::RelayId::new("endpoint", id)?;
            if active.load(Ordering::SeqCst) {
                self.store
                    .relay_subscribe(&self.o.node_id, &endpoint, &pattern)
                    .await?;
            }
            if !active.load(Ordering::SeqCst) {
                self.remove_endpoint(&endpoint).await?;
            }
        }
        if !self
            .store
            .relay_heartbeat(&self.o.node_id, self.o.lease)
            .await?
        {
            return Err(lease_lost());
        }
        self.recovery_pending.store(false, Ordering::SeqCst);
        let _ = self.events.send(RelayEvent::Recovered);
        Ok(())
    }

    async fn sweep(&self) -> Result<()> {
        let removed = self.store.relay_sweep(SWEEP_LIMIT).await?;
        if !removed.is_empty() {
            let _ = self.events.send(RelayEvent::Swept(removed));
        }
        Ok(())
    }

    /// Reads the inbox until the relay closes. A batch is handed to the handlers only after
    /// a heartbeat (a lease may have ended while reading: recovery comes first), and only if
    /// no recovery replaced the registration meanwhile (then it is read again, from the new
    /// inbox).
    async fn read_loop(self: Arc<Self>) {
        let mut fetched = None;
        while !self.closing.is_cancelled() {
            if let Err(e) = self.read_step(&mut fetched).await {
                self.batch_in_flight.store(false, Ordering::SeqCst);
                if self.closing.is_cancelled() {
                    break;
                }
                self.emit_error(e);
                tokio::select! {
                    () = self.closing.cancelled() => break,
                    () = tokio::time::sleep(RETRY_PAUSE) => {}
                }
            }
        }
    }

    async fn read_step(&self, fetched: &mut Option<(super::RelayInboxBatch, u64)>) -> Result<()> {
        if fetched.is_none() {
            drop(self.backlog_lock.lock().await);
            let registration = self.registration.load(Ordering::SeqCst);
            let cursor = lock(&self.cursor).clone();
            let read =
                self.store
                    .relay_read_inbox(&self.o.node_id, &cursor, self.o.block_timeout, BATCH);
            let batch = tokio::select! {
                () = self.closing.cancelled() => return Ok(()),
                batch = read => batch?,
            };
            *fetched = Some((batch, registration));
        }
        let has_entries = fetched.as_ref().is_some_and(|(b, _)| !b.entries.is_empty());
        self.batch_in_flight.store(has_entries, Ordering::SeqCst);
        if has_entries && !self.closing.is_cancelled() {
            self.heartbeat(false).await?;
        }
        if self.closing.is_cancelled() {
            return Ok(());
        }
        let Some((batch, registration)) = fetched.take() else {
            return Ok(());
        };
        if registration == self.registration.load(Ordering::SeqCst) {
            *lock(&self.cursor) = batch.cursor;
            let _dispatching = self.dispatch_lock.lock().await;
            for entry in batch.entries {
                self.dispatch(entry);
            }
        }
        self.batch_in_flight.store(false, Ordering::SeqCst);
        if has_entries {
            self.check_backlog().await?;
        }
        Ok(())
    }

    /// Hands an entry to the endpoints it is for (held back for those still subscribing).
    fn dispatch(&self, entry: RelayInboxEntry) {
        // Kinds added by later versions are not for this node.
        if entry.kind != "msg" {
            return;
        }
        let message = RawMessage {
            topic: entry.topic,
            mid: entry.mid,
            ts: entry.ts,
            data: entry.data,
            retained: false,
        };
        let mut now = Vec::new();
        {
            let mut endpoints = lock(&self.endpoints);
            for id in &entry.endpoints {
                let Some(endpoint) = endpoints.get_mut(id) else {
                    continue;
                };
                if !endpoint.active.load(Ordering::SeqCst) {
                    continue;
                }
                match &mut endpoint.pending {
                    Some(pending) => pending.push(message.clone()),
                    None => now.push((Arc::clone(&endpoint.deliver), Arc::clone(&endpoint.active))),
                }
            }
        }
        for (deliver, active) in now {
            Endpoint::deliver(&deliver, &active, message.clone());
        }
    }
}

fn lease_lost() -> Error {
    Error::Relay(super::RelayError::new(
        -3,
        "the lease ended during recovery",
    ))
}
