//! A waiter's view of the `LISTEN` connection's signals and of the backend's interrupts: what
//! the worker's wait for a job (`blocking`) and the event reader (`events`) wait on.
//!
//! A waiter takes its [`Watch`] before it first looks at the database, so a notification that
//! arrives after the look is never missed; while notifications cannot be relied on (polling
//! forced, the connection down or not yet listening) it wakes every poll interval to look
//! again.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::PostgresBackend;
use crate::connection::listener::{Channel, Signals, Waiting};

/// Counters bumped to end waits in flight; a waiter that sees one change returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Interrupts {
    /// `disconnect_blocking`: ends the worker's wait for a job.
    pub(crate) blocking: u64,
    /// `close` and `disconnect`: end every wait.
    pub(crate) all: u64,
}

/// What ended a [`Watch::wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Woken {
    /// A notification for the queue on the watched channel.
    Heard,
    /// Time to look at the database again: the poll interval passed while notifications
    /// could not be relied on, or the connection came or went (one may have been missed).
    Look,
    /// The deadline passed.
    Deadline,
    /// `close`, `disconnect` (or, for the worker's wait, `disconnect_blocking`) was called.
    Interrupted,
}

/// One waiter's view of the listener and the interrupts, taken before it first looks at
/// the database.
pub(crate) struct Watch {
    channel: Channel,
    /// `None` when polling is forced.
    signals: Option<watch::Receiver<Signals>>,
    seen: Signals,
    interrupts: watch::Receiver<Interrupts>,
    start: Interrupts,
    /// Whether only `close` and `disconnect` interrupt (not `disconnect_blocking`).
    all_only: bool,
    poll: Duration,
    /// Keeps the channel listened on while the wait lasts (`None` when polling is forced).
    _waiting: Option<Waiting>,
}

impl Watch {
    /// Subscribes, then asks for notifications on `channel` (unless polling is forced).
    pub(crate) fn start(backend: &PostgresBackend, channel: Channel, all_only: bool) -> Self {
        let state = &backend.state;
        let mut interrupts = state.interrupts.subscribe();
        let start = *interrupts.borrow_and_update();
        let mut signals = (!state.forced_polling()).then(|| state.listener.subscribe());
        let seen = signals
            .as_mut()
            .map(|rx| *rx.borrow_and_update())
            .unwrap_or_default();
        let waiting = signals.as_ref().map(|_| state.listener.waiting(channel));
        if signals.is_some() {
            backend.want_notifications(channel);
        }
        Self {
            channel,
            signals,
            seen,
            interrupts,
            start,
            all_only,
            poll: state.poll_interval(),
            _waiting: waiting,
        }
    }

    /// Whether an interrupt came since [`start`](Self::start).
    pub(crate) fn interrupted(&self) -> bool {
        interrupted(self.start, *self.interrupts.borrow(), self.all_only)
    }

    /// Resolves when interrupted (never otherwise).
    pub(crate) async fn until_interrupted(&mut self) {
        loop {
            if self.interrupted() || self.interrupts.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits for a notification, a reason to look again, the deadline or an interrupt.
    pub(crate) async fn wait(&mut self, deadline: Instant) -> Woken {
        let listening = self.signals.is_some() && self.seen.listening(self.channel);
        let wake = if listening {
            deadline
        } else {
            deadline.min(Instant::now() + self.poll)
        };
        let sleep = tokio::time::sleep_until(wake);
        tokio::pin!(sleep);
        let Self {
            all_only,
            channel,
            interrupts,
            seen,
            signals,
            start,
            ..
        } = self;
        loop {
            if interrupted(*start, *interrupts.borrow(), *all_only) {
                return Woken::Interrupted;
            }
            let changed_signals = async {
                match signals.as_mut() {
                    Some(rx) => rx.changed().await.map(|()| *rx.borrow_and_update()),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                changed = interrupts.changed() => {
                    if changed.is_err() {
                        return Woken::Interrupted;
                    }
                }
                changed = changed_signals => {
                    let Ok(now) = changed else {
                        // The listener is gone (not while the backend lives): poll.
                        *signals = None;
                        return Woken::Look;
                    };
                    let before = std::mem::replace(seen, now);
                    if now.heard(*channel) != before.heard(*channel) {
                        return Woken::Heard;
                    }
                    if now.look_again_since(&before, *channel) {
                        return Woken::Look;
                    }
                }
                () = &mut sleep => {
                    return if Instant::now() >= deadline { Woken::Deadline } else { Woken::Look };
                }
            }
        }
    }
}

/// Whether `now` has an interrupt that `start` had not (only `all` ones with `all_only`).
fn interrupted(start: Interrupts, now: Interrupts, all_only: bool) -> bool {
    now.all != start.all || (!all_only && now.blocking != start.blocking)
}

impl PostgresBackend {
    /// Asks the `LISTEN` connection to listen on `channel`, opening it in the background if
    /// needed; nothing when polling is forced or the backend is closing.
    pub(crate) fn want_notifications(&self, channel: Channel) {
        if self.state.forced_polling() || self.state.is_closing() {
            return;
        }
        self.state
            .listener
            .want(self.pool(), self.queue_name(), channel);
    }
}
