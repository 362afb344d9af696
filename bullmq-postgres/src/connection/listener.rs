//! The dedicated `LISTEN` connection: one per backend (shared by its clones), outside the
//! pool, so that a pool of one connection cannot starve it.
//!
//! A background task owns the connection (an sqlx [`PgListener`] on a private pool of one
//! connection, named with the role's `application_name`). It runs upstream's `listen_jobs` /
//! `listen_events` commands for the channels a waiter asked for, keeps the notifications whose
//! payload is this backend's queue, and publishes them as counters on a `watch` channel
//! ([`Signals`]). Waiters subscribe *before* they look at the database, so a notification
//! that arrives after their look is never missed.
//!
//! A channel no waiter has wanted for [`RELEASE_AFTER`] is given up (`UNLISTEN`), and listened
//! on again when a waiter next wants it: PostgreSQL signals every listening backend of the
//! database at each commit that notifies, on any channel, and the backend reads its queue in a
//! transaction of its own each time. A worker busy with jobs claims its next one in the call
//! that finishes the last and does not wait, so holding the `LISTEN` then would only cost the
//! server one more commit per job. Waiters poll while the channel is not listened on and look
//! again once it is, as after a reconnection, so nothing is missed.
//!
//! When the connection is lost (reported by the client, or a ping after a quiet spell goes
//! unanswered), notifications may have been missed: the task says so ([`Signals::resets`]
//! and the listening flags cleared), waiters fall back to polling, and the task reconnects
//! with a growing pause, runs the `LISTEN`s again and says so once more, which makes the
//! waiters look again.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bullmq_core::Result;
use bullmq_core::telemetry::ConnectionLog;
use sqlx::postgres::{PgConnectOptions, PgListener, PgNotification, PgPool, PgPoolOptions};
use sqlx::{Acquire as _, Executor as _};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use tracing::Instrument as _;

use super::open::target;
use crate::error::wrap;
use crate::sql::commands;

/// The first pause before reconnecting; it doubles up to [`RETRY_MAX`].
const RETRY_MIN: Duration = Duration::from_millis(100);
/// The longest pause between reconnection attempts.
const RETRY_MAX: Duration = Duration::from_secs(5);
/// After this long without a message the connection is pinged: a silently dropped
/// connection (no TCP keepalive) would otherwise go unnoticed.
const PING_AFTER: Duration = Duration::from_secs(15);
/// How long the ping may take before the connection is deemed lost.
const PING_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a listened channel may go without a waiter before it is given up.
const RELEASE_AFTER: Duration = Duration::from_millis(250);
/// How long a stopping task may take to close its connection before it is aborted.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// A channel upstream notifies on, with the queue name as payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    /// `bullmq_jobs`: a job may be ready (`add_job` and the other moves to wait).
    Jobs,
    /// `bullmq_events`: events were published.
    Events,
}

impl Channel {
    /// The channel's name, as the notifications carry it.
    const fn name(self) -> &'static str {
        match self {
            Self::Jobs => "bullmq_jobs",
            Self::Events => "bullmq_events",
        }
    }

    /// Upstream's command that listens on it.
    const fn listen(self) -> &'static str {
        match self {
            Self::Jobs => commands::LISTEN_JOBS.text,
            Self::Events => commands::LISTEN_EVENTS.text,
        }
    }

    /// The statement that stops listening on it (upstream never gives a channel up).
    const fn unlisten(self) -> &'static str {
        match self {
            Self::Jobs => "UNLISTEN bullmq_jobs",
            Self::Events => "UNLISTEN bullmq_events",
        }
    }

    /// The channel's slot in per-channel arrays.
    const fn index(self) -> usize {
        match self {
            Self::Jobs => 0,
            Self::Events => 1,
        }
    }
}

/// How many waits want each channel now, by [`Channel::index`].
type Waiters = [usize; 2];

/// A wait's claim on a channel, counted in the listener's [`Waiters`] while it lives.
pub(crate) struct Waiting {
    waiters: Arc<watch::Sender<Waiters>>,
    channel: Channel,
}

impl Waiting {
    fn new(waiters: &Arc<watch::Sender<Waiters>>, channel: Channel) -> Self {
        waiters.send_modify(|w| w[channel.index()] += 1);
        Self {
            waiters: Arc::clone(waiters),
            channel,
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let i = self.channel.index();
        self.waiters.send_modify(|w| w[i] = w[i].saturating_sub(1));
    }
}

/// A set of channels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Channels {
    jobs: bool,
    events: bool,
}

impl Channels {
    fn has(self, channel: Channel) -> bool {
        match channel {
            Channel::Jobs => self.jobs,
            Channel::Events => self.events,
        }
    }

    fn add(&mut self, channel: Channel) {
        self.set(channel, true);
    }

    fn remove(&mut self, channel: Channel) {
        self.set(channel, false);
    }

    fn set(&mut self, channel: Channel, on: bool) {
        match channel {
            Channel::Jobs => self.jobs = on,
            Channel::Events => self.events = on,
        }
    }

    fn iter(self) -> impl Iterator<Item = Channel> {
        [Channel::Jobs, Channel::Events]
            .into_iter()
            .filter(move |c| self.has(*c))
    }
}

/// What the listener tells the waiters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Signals {
    /// Notifications heard on `bullmq_jobs` for the queue.
    jobs: u64,
    /// Notifications heard on `bullmq_events` for the queue.
    events: u64,
    /// Bumped when the connection is lost or (re)established: notifications may have been
    /// missed, so waiters look at the database again.
    resets: u64,
    /// The channels the live connection listens on (none while it is down).
    listening: Channels,
}

impl Signals {
    /// Notifications heard on `channel` for the queue so far.
    pub(crate) fn heard(&self, channel: Channel) -> u64 {
        match channel {
            Channel::Jobs => self.jobs,
            Channel::Events => self.events,
        }
    }

    /// Whether notifications on `channel` can be relied on now.
    pub(crate) fn listening(&self, channel: Channel) -> bool {
        self.listening.has(channel)
    }

    /// Whether the connection came or went, or started or stopped listening on `channel`,
    /// since `before`: notifications on it may have been missed, so its waiters look at the
    /// database again. The other channel's comings and goings are no reason to.
    pub(crate) fn look_again_since(&self, before: &Self, channel: Channel) -> bool {
        self.resets != before.resets || self.listening(channel) != before.listening(channel)
    }
}

/// The `LISTEN` connection of one backend.
pub(crate) struct Listener {
    signals: Arc<watch::Sender<Signals>>,
    /// The waits in progress per channel: a channel none wants is given up after a while.
    waiters: Arc<watch::Sender<Waiters>>,
    inner: Mutex<Inner>,
}

impl Default for Listener {
    fn default() -> Self {
        Self {
            signals: Arc::new(watch::channel(Signals::default()).0),
            waiters: Arc::new(watch::channel(Waiters::default()).0),
            inner: Mutex::new(Inner::default()),
        }
    }
}

/// The listener's settings and its task.
#[derive(Default)]
struct Inner {
    /// The `application_name` of the connection, once a role named it.
    name: Option<String>,
    /// The channels waiters asked for.
    wanted: Channels,
    running: Option<Running>,
}

/// A running listener task.
struct Running {
    /// Channels to listen on; dropping it tells the task to close its connection and end.
    commands: mpsc::UnboundedSender<Channel>,
    task: JoinHandle<()>,
}

impl Running {
    /// Ends the task, closing its connection, or aborts it after [`STOP_GRACE`].
    async fn stop(self) {
        let Self { commands, mut task } = self;
        drop(commands);
        if tokio::time::timeout(STOP_GRACE, &mut task).await.is_err() {
            task.abort();
        }
    }
}

/// Where the task connects, and which notifications are the queue's.
struct Target {
    options: PgConnectOptions,
    acquire_timeout: Duration,
    queue: String,
    /// Losses and recoveries of the connection, logged.
    link: ConnectionLog,
}

impl Target {
    /// The pool's settings (schema and all), named `name` when given.
    fn new(pool: &PgPool, queue: &str, name: Option<&str>) -> Self {
        let mut options = (*pool.connect_options()).clone();
        if let Some(name) = name {
            options = options.application_name(name);
        }
        Self {
            link: ConnectionLog::new("postgres LISTEN connection", target(&options)),
            options,
            acquire_timeout: pool.options().get_acquire_timeout(),
            queue: queue.to_owned(),
        }
    }
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Listener {
    /// A receiver of the listener's signals; subscribe before looking at the database.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Signals> {
        self.signals.subscribe()
    }

    /// Counts a wait on `channel` until the returned guard is dropped.
    pub(crate) fn waiting(&self, channel: Channel) -> Waiting {
        Waiting::new(&self.waiters, channel)
    }

    /// Remembers the connection's name for when it opens.
    pub(crate) fn set_name(&self, name: String) {
        lock(&self.inner).name = Some(name);
    }

    /// Makes sure the task runs and listens on `channel`, without waiting: when it starts
    /// listening, [`Signals`] change.
    pub(crate) fn want(&self, pool: &PgPool, queue: &str, channel: Channel) {
        let mut inner = lock(&self.inner);
        inner.wanted.add(channel);
        if let Some(running) = inner.running.as_ref().filter(|r| !r.task.is_finished()) {
            // Ignored by the task when it already listens there.
            let _ = running.commands.send(channel);
            return;
        }
        let target = Target::new(pool, queue, inner.name.as_deref());
        let wanted = inner.wanted;
        inner.running = Some(self.spawn(target, wanted, None));
    }

    /// Names the connection and opens it now (closing the one open), listening on `channel`
    /// and the channels asked for before; fails when it cannot be opened.
    pub(crate) async fn open_named(
        &self,
        pool: &PgPool,
        queue: &str,
        name: String,
        channel: Channel,
    ) -> Result<()> {
        let (old, target, wanted) = {
            let mut inner = lock(&self.inner);
            inner.name = Some(name);
            inner.wanted.add(channel);
            let target = Target::new(pool, queue, inner.name.as_deref());
            (inner.running.take(), target, inner.wanted)
        };
        if let Some(old) = old {
            old.stop().await;
        }
        let opened = connect(&target, wanted)
            .await
            .map_err(wrap("open the LISTEN connection"))?;
        let running = self.spawn(target, wanted, Some(opened));
        let replaced = lock(&self.inner).running.replace(running);
        // A wait may have started another task meanwhile; ours has the name for sure.
        if let Some(replaced) = replaced {
            replaced.stop().await;
        }
        Ok(())
    }

    /// Closes the connection (if open) and ends its task; the next [`want`](Self::want)
    /// opens a new one.
    pub(crate) async fn stop(&self) {
        let running = lock(&self.inner).running.take();
        if let Some(running) = running {
            running.stop().await;
        }
    }

    fn spawn(&self, target: Target, wanted: Channels, opened: Option<Opened>) -> Running {
        let (commands, received) = mpsc::unbounded_channel();
        let links = Links {
            commands: received,
            signals: Arc::clone(&self.signals),
            waiters: self.waiters.subscribe(),
        };
        let task = tokio::spawn(run(target, wanted, opened, links));
        Running { commands, task }
    }
}

/// A listening connection and its private pool.
type Opened = (PgListener, PgPool);

/// Opens a connection on a private pool of one and runs the `LISTEN`s for `wanted`.
///
/// Each connection gets a pool of its own: a connection that hung would otherwise keep the
/// pool's only slot while it is being closed.
async fn connect(target: &Target, wanted: Channels) -> std::result::Result<Opened, sqlx::Error> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(0)
        .acquire_timeout(target.acquire_timeout)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_lazy_with(target.options.clone());
    let listening = async {
        let mut listener = PgListener::connect_with(&pool).await?;
        // A lost connection must come back to us: `run` opens and names the next one and
        // runs the `LISTEN`s on it itself.
        listener.eager_reconnect(false);
        for channel in wanted.iter() {
            run_on(&mut listener, channel.listen()).await?;
        }
        Ok(listener)
    }
    .await;
    match listening {
        Ok(listener) => Ok((listener, pool)),
        Err(err) => {
            // Closing marks the pool closed at once; whatever it holds closes when let go.
            drop(pool.close());
            Err(err)
        }
    }
}

/// Runs `sql` (simple protocol) on the listener's connection.
///
/// Boxed with a named lifetime: the `Executor` of `&mut PgListener` is not general enough
/// for the compiler to prove the task's future `Send` otherwise.
fn run_on<'a>(
    listener: &'a mut PgListener,
    sql: &'static str,
) -> Pin<Box<dyn Future<Output = std::result::Result<(), sqlx::Error>> + Send + 'a>> {
    Box::pin(async move {
        let conn = listener.acquire().await?;
        conn.execute(sql).await.map(drop)
    })
}

/// Why [`serve`] returned.
enum Ended {
    /// The connection was lost (how): reconnect.
    Lost(String),
    /// The listener was stopped: close the connection and end.
    Stopped,
}

/// What the task hears from the listener and tells the waiters.
struct Links {
    /// Channels to listen on; closed when the task is to end.
    commands: mpsc::UnboundedReceiver<Channel>,
    signals: Arc<watch::Sender<Signals>>,
    waiters: watch::Receiver<Waiters>,
}

/// The task: connects (unless given a connection), serves until the connection is lost,
/// reconnects; ends when the command channel closes.
async fn run(target: Target, mut wanted: Channels, mut opened: Option<Opened>, mut links: Links) {
    let mut retry = RETRY_MIN;
    loop {
        let reopened = match opened.take() {
            Some(opened) => Ok(opened),
            // While the connection is lost, opening one is the attempt to reconnect.
            None if target.link.is_down() => {
                connect(&target, wanted)
                    .instrument(target.link.reconnect_span())
                    .await
            }
            None => connect(&target, wanted).await,
        };
        let (mut listener, pool) = match reopened {
            Ok(opened) => opened,
            Err(err) => {
                target.link.lost(&err);
                tracing::debug!(error = %err, "bullmq: cannot open the LISTEN connection; waits poll meanwhile");
                let pause = tokio::time::sleep(retry);
                tokio::pin!(pause);
                loop {
                    tokio::select! {
                        () = &mut pause => break,
                        command = links.commands.recv() => match command {
                            Some(channel) => wanted.add(channel),
                            None => return,
                        },
                    }
                }
                retry = (retry * 2).min(RETRY_MAX);
                continue;
            }
        };
        target.link.up();
        retry = RETRY_MIN;
        let mut listening = wanted;
        links.signals.send_modify(|s| {
            s.resets = s.resets.wrapping_add(1);
            s.listening = listening;
        });
        let ended = serve(&mut listener, &target.queue, &mut listening, &mut links).await;
        // What is listened on when the connection comes back: what was wanted last.
        wanted = listening;
        links.signals.send_modify(|s| {
            s.resets = s.resets.wrapping_add(1);
            s.listening = Channels::default();
        });
        // Closing marks the pool closed, so the connection is closed (not kept) when the
        // listener lets go of it.
        let closing = pool.close();
        drop(listener);
        match ended {
            Ended::Stopped => {
                let _ = tokio::time::timeout(STOP_GRACE, closing).await;
                return;
            }
            Ended::Lost(how) => {
                target.link.lost(&how);
                drop(closing);
            }
        }
    }
}

/// One step of [`serve`].
enum Step {
    Command(Option<Channel>),
    Received(std::result::Result<Option<PgNotification>, sqlx::Error>),
    Quiet,
    /// The count of waits changed.
    Waiters,
    /// A listened channel has had no wait for [`RELEASE_AFTER`].
    Release,
}

/// Since when each listened channel has had no wait (by [`Channel::index`]).
type Unwanted = [Option<Instant>; 2];

/// Starts or stops the clock of each listened channel that no wait wants.
fn track_unwanted(unwanted: &mut Unwanted, listening: Channels, waiters: Waiters) {
    for channel in [Channel::Jobs, Channel::Events] {
        let slot = &mut unwanted[channel.index()];
        if !listening.has(channel) || waiters[channel.index()] > 0 {
            *slot = None;
        } else if slot.is_none() {
            *slot = Some(Instant::now());
        }
    }
}

/// Relays the queue's notifications, runs the `LISTEN`s asked for and gives up the channels
/// no wait wants, until the connection is lost or the listener stopped.
async fn serve(
    listener: &mut PgListener,
    queue: &str,
    listening: &mut Channels,
    links: &mut Links,
) -> Ended {
    let Links {
        commands,
        signals,
        waiters,
    } = links;
    let mut unwanted = Unwanted::default();
    track_unwanted(&mut unwanted, *listening, *waiters.borrow_and_update());
    loop {
        let release_at = unwanted
            .iter()
            .flatten()
            .min()
            .map(|since| *since + RELEASE_AFTER);
        let release = async {
            match release_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        // `try_recv` is cancel-safe while the listener holds a connection, which it always
        // does here: a lost one ends this function (no eager reconnect).
        let step = tokio::select! {
            biased;
            command = commands.recv() => Step::Command(command),
            changed = waiters.changed() => {
                // The sender lives in the listener, which outlives its task.
                if changed.is_err() { Step::Command(None) } else { Step::Waiters }
            }
            received = tokio::time::timeout(PING_AFTER, listener.try_recv()) => {
                received.map_or(Step::Quiet, Step::Received)
            }
            () = release => Step::Release,
        };
        match step {
            Step::Command(None) => return Ended::Stopped,
            Step::Command(Some(channel)) => {
                if listening.has(channel) {
                    continue;
                }
                if let Err(err) = run_on(listener, channel.listen()).await {
                    return Ended::Lost(format!("LISTEN failed: {err}"));
                }
                listening.add(channel);
                signals.send_modify(|s| s.listening.add(channel));
                track_unwanted(&mut unwanted, *listening, *waiters.borrow_and_update());
            }
            Step::Waiters => {
                track_unwanted(&mut unwanted, *listening, *waiters.borrow_and_update());
            }
            Step::Release => {
                let now = Instant::now();
                for channel in [Channel::Jobs, Channel::Events] {
                    let idle = waiters.borrow()[channel.index()] == 0;
                    let due = idle
                        && unwanted[channel.index()]
                            .is_some_and(|since| since + RELEASE_AFTER <= now);
                    if !due {
                        continue;
                    }
                    unwanted[channel.index()] = None;
                    // Waiters stop relying on the channel before it goes quiet.
                    signals.send_modify(|s| s.listening.remove(channel));
                    listening.remove(channel);
                    if let Err(err) = run_on(listener, channel.unlisten()).await {
                        return Ended::Lost(format!("UNLISTEN failed: {err}"));
                    }
                }
                // A wait that began meanwhile asked for the channel again: its command follows.
            }
            Step::Received(Ok(Some(notification))) => {
                if notification.payload() != queue {
                    continue;
                }
                let channel = notification.channel();
                signals.send_if_modified(|s| {
                    if channel == Channel::Jobs.name() {
                        s.jobs = s.jobs.wrapping_add(1);
                    } else if channel == Channel::Events.name() {
                        s.events = s.events.wrapping_add(1);
                    } else {
                        return false;
                    }
                    true
                });
            }
            Step::Received(Ok(None)) => {
                return Ended::Lost("the connection was closed".to_owned());
            }
            Step::Received(Err(err)) => {
                return Ended::Lost(err.to_string());
            }
            Step::Quiet => {
                let ping = run_on(listener, "SELECT 1");
                if !matches!(tokio::time::timeout(PING_TIMEOUT, ping).await, Ok(Ok(_))) {
                    return Ended::Lost("no answer to a ping".to_owned());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Channel, Channels};

    #[test]
    fn channel_sets_and_commands() {
        let mut set = Channels::default();
        assert!(!set.has(Channel::Jobs));
        set.add(Channel::Events);
        assert_eq!(set.iter().collect::<Vec<_>>(), [Channel::Events]);
        set.add(Channel::Jobs);
        assert_eq!(set.iter().count(), 2);
        assert!(Channel::Jobs.listen().contains("LISTEN bullmq_jobs"));
        assert!(Channel::Events.listen().contains("LISTEN bullmq_events"));
    }
}
