//! `top`: a live view of queues (counts, jobs per second in and out, failures, the oldest
//! waiting job, workers), redrawn as their event streams report changes and polled every
//! `--interval` besides; keys pause or resume the selected queue and open its failed jobs.

mod keys;
mod sample;
mod view;

use std::io::IsTerminal as _;
use std::sync::Arc;
use std::time::Duration;

use bullmq::backend::Range;
use bullmq::job::JobType;
use bullmq::{AnyBackend, JobState, QueueEvents, QueueEventsOptions, QueueName};
use ratatui::DefaultTerminal;
use tokio::sync::Notify;
use tokio::sync::mpsc::unbounded_channel;
use tokio::time::Instant;

use self::keys::Action;
use self::sample::{Tallies, Watched};
use self::view::{FailedJob, Screen};
use crate::cli::TopArgs;
use crate::context::Ctx;
use crate::fail::{Failure, cause};
use crate::store::{queue_name, queue_on};

/// The quickest an event stream may redraw the screen again.
const EVENT_REDRAW_GAP: Duration = Duration::from_millis(250);

/// Failed jobs the panel lists.
const FAILED_SHOWN: i64 = 12;

/// The queues on screen and the event readers that feed their rates.
struct Board {
    backend: AnyBackend,
    /// The queues asked for; every queue of the store (listed at each poll) when empty.
    asked: Vec<QueueName>,
    queues: Vec<Watched>,
    readers: Vec<QueueEvents<AnyBackend>>,
    changed: Arc<Notify>,
}

pub(super) async fn run(ctx: &Ctx, args: &TopArgs, read_only: bool) -> Result<(), Failure> {
    if !std::io::stdout().is_terminal() {
        return Err(Failure::usage(
            "`top` draws on a terminal and stdout is not one; for scripts use `bullmq queues -o \
             json` (counts) or `bullmq events QUEUE --follow`",
        ));
    }
    let asked = args
        .queues
        .iter()
        .map(|q| queue_name(q))
        .collect::<Result<Vec<_>, _>>()?;
    let first = asked.first().map_or("bullmq-cli", QueueName::as_str);
    let mut board = Board {
        backend: ctx.store.backend(first).await?,
        asked,
        queues: Vec::new(),
        readers: Vec::new(),
        changed: Arc::new(Notify::new()),
    };
    let mut screen = Screen::default();
    board.poll(ctx, &mut screen).await;
    let mut terminal = ratatui::try_init().map_err(|e| {
        Failure::failed(format!(
            "cannot draw on the terminal: {e}; run `top` in an interactive terminal"
        ))
    })?;
    let result = watch(ctx, args, read_only, &mut board, &mut screen, &mut terminal).await;
    ratatui::restore();
    for reader in &board.readers {
        reader.close().await;
    }
    result
}

/// The screen's loop: redraws after every poll, burst of events or key, until `q`.
async fn watch(
    ctx: &Ctx,
    args: &TopArgs,
    read_only: bool,
    board: &mut Board,
    screen: &mut Screen,
    terminal: &mut DefaultTerminal,
) -> Result<(), Failure> {
    let (keys_tx, mut keys) = unbounded_channel();
    std::thread::spawn(move || keys::read(&keys_tx));
    let mut ticker = tokio::time::interval(Duration::from_millis(args.interval));
    // A slow poll delays the next one rather than triggering a burst of catch-up polls.
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let changed = Arc::clone(&board.changed);
    let mut event_redraw: Option<Instant> = None;
    loop {
        screen.title = format!(
            "bullmq top · {} · every {} ms and on events · {}",
            ctx.store.target(),
            args.interval,
            crate::output::time(Some(now_ms()))
                .get(11..19)
                .unwrap_or_default()
        );
        terminal
            .draw(|frame| view::draw(frame, &board.queues, screen))
            .map_err(|e| Failure::failed(format!("cannot draw on the terminal: {e}")))?;
        tokio::select! {
            _ = ticker.tick() => board.poll(ctx, screen).await,
            () = changed.notified(), if event_redraw.is_none() => {
                event_redraw = Some(Instant::now() + EVENT_REDRAW_GAP);
            }
            () = tokio::time::sleep_until(event_redraw.unwrap_or_else(Instant::now)),
                if event_redraw.is_some() => {
                event_redraw = None;
                board.poll(ctx, screen).await;
            }
            action = keys.recv() => match action.unwrap_or(Action::Quit) {
                Action::Quit => return Ok(()),
                Action::Up => screen.selected = screen.selected.saturating_sub(1),
                Action::Down => {
                    screen.selected = (screen.selected + 1).min(board.queues.len().saturating_sub(1));
                }
                Action::TogglePause => {
                    board.toggle_pause(screen, read_only).await;
                    board.poll(ctx, screen).await;
                }
                Action::OpenFailed => board.open_failed(screen).await,
                Action::Close => screen.failed = None,
                Action::Refresh => board.poll(ctx, screen).await,
                Action::Redraw => {}
            },
        }
    }
}

impl Board {
    /// Lists the queues (when none were asked for) and reads each again.
    async fn poll(&mut self, ctx: &Ctx, screen: &mut Screen) {
        let names = if self.asked.is_empty() {
            match self.backend.queue_names().await {
                Ok(names) => names,
                Err(e) => {
                    screen.status = format!(
                        "cannot list the queues on {}: {}",
                        ctx.store.target(),
                        cause(&e)
                    );
                    return;
                }
            }
        } else {
            self.asked.clone()
        };
        self.queues
            .retain(|q| names.iter().any(|n| n.as_str() == q.name));
        for name in names {
            if !self.queues.iter().any(|q| q.name == name.as_str()) {
                let watched = self.watch_queue(&name);
                self.queues.push(watched);
            }
        }
        self.queues.sort_by(|a, b| a.name.cmp(&b.name));
        let now_ms = now_ms();
        for queue in &mut self.queues {
            if let Err(e) = queue.refresh(now_ms).await {
                screen.status = format!("cannot read queue {:?}: {}", queue.name, cause(&e));
            }
        }
        screen.selected = screen.selected.min(self.queues.len().saturating_sub(1));
    }

    /// A queue to show, with a reader of its event stream counting what happens (none when
    /// the stream cannot be read: then the rates come from the counts).
    fn watch_queue(&mut self, name: &QueueName) -> Watched {
        let queue = queue_on(&self.backend, name.clone());
        let tallies = match QueueEvents::new(queue.backend().clone(), QueueEventsOptions::new()) {
            Ok(reader) => {
                let tallies = Arc::new(Tallies::default());
                let mut subscription = reader.subscribe();
                let (counted, changed) = (Arc::clone(&tallies), Arc::clone(&self.changed));
                tokio::spawn(async move {
                    while let Some(event) = subscription.next_event().await {
                        counted.hear(event.event.name());
                        changed.notify_one();
                    }
                });
                self.readers.push(reader);
                Some(tallies)
            }
            Err(_) => None,
        };
        Watched::new(name.as_str().to_owned(), queue, tallies)
    }

    /// Pauses the selected queue, or resumes it when paused (refused in read-only mode).
    async fn toggle_pause(&self, screen: &mut Screen, read_only: bool) {
        let Some(watched) = self.queues.get(screen.selected) else {
            return;
        };
        if read_only {
            screen.status =
                "read-only mode (--read-only or BULLMQ_READ_ONLY): pausing and resuming are refused"
                    .to_owned();
            return;
        }
        let (result, done) = if watched.row.paused {
            (watched.queue.resume().await, "resumed")
        } else {
            (watched.queue.pause().await, "paused")
        };
        screen.status = match result {
            Ok(()) => format!("{done} queue {:?}", watched.name),
            Err(e) => format!(
                "cannot pause or resume queue {:?}: {}",
                watched.name,
                cause(&e)
            ),
        };
    }

    /// Opens the panel of the selected queue's failed jobs, newest first.
    async fn open_failed(&self, screen: &mut Screen) {
        let Some(watched) = self.queues.get(screen.selected) else {
            return;
        };
        let range = Range {
            start: 0,
            end: FAILED_SHOWN - 1,
            asc: false,
        };
        match watched
            .queue
            .get_jobs(&[JobType::State(JobState::Failed)], range)
            .await
        {
            Ok(jobs) => {
                let jobs = jobs
                    .into_iter()
                    .map(|j| FailedJob {
                        id: j.id.as_str().to_owned(),
                        name: j.name,
                        attempts: u64::from(j.attempts_made),
                        reason: j.failed_reason.unwrap_or_default(),
                    })
                    .collect();
                screen.failed = Some((watched.name.clone(), jobs));
            }
            Err(e) => {
                screen.status = format!(
                    "cannot read the failed jobs of queue {:?}: {}",
                    watched.name,
                    cause(&e)
                );
            }
        }
    }
}

/// Now, Unix ms, by this host's clock.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
