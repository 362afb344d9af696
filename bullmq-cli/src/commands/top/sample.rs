//! One queue as `top` shows it: its counts, its rates over the last seconds, its oldest
//! waiting job, its workers.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bullmq::backend::Range;
use bullmq::job::JobType;
use bullmq::{AnyBackend, JobState, Queue};

/// How far back the rates look.
const WINDOW: Duration = Duration::from_secs(5);

/// Events heard on a queue's event stream since `top` started, by kind.
#[derive(Debug, Default)]
pub(super) struct Tallies {
    pub(super) added: AtomicU64,
    pub(super) completed: AtomicU64,
    pub(super) failed: AtomicU64,
}

impl Tallies {
    /// Counts one event by its name; other events are not counted.
    pub(super) fn hear(&self, name: &str) {
        let counter = match name {
            "added" => &self.added,
            "completed" => &self.completed,
            "failed" => &self.failed,
            _ => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Running totals at one moment: jobs in, jobs out, jobs failed.
#[derive(Debug, Clone, Copy)]
struct Totals {
    at: Instant,
    jobs_in: u64,
    jobs_out: u64,
    failed: u64,
}

/// A queue's counts as last read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counts {
    pub(crate) waiting: u64,
    pub(crate) prioritized: u64,
    pub(crate) delayed: u64,
    pub(crate) active: u64,
    pub(crate) completed: u64,
    pub(crate) failed: u64,
    pub(crate) waiting_children: u64,
}

impl Counts {
    fn every_job(&self) -> u64 {
        self.waiting
            + self.prioritized
            + self.delayed
            + self.active
            + self.completed
            + self.failed
            + self.waiting_children
    }
}

/// One watched queue: its handle, where its rates come from, and what was last read.
pub(crate) struct Watched {
    pub(crate) name: String,
    pub(crate) queue: Queue<AnyBackend>,
    /// The event stream's tallies; `None` when it could not be read (rates from the counts).
    pub(super) tallies: Option<Arc<Tallies>>,
    history: VecDeque<Totals>,
    pub(crate) row: Row,
}

/// What a row of the view shows.
#[derive(Debug, Clone, Default)]
pub(crate) struct Row {
    pub(crate) paused: bool,
    pub(crate) counts: Counts,
    pub(crate) workers: u64,
    pub(crate) in_per_sec: f64,
    pub(crate) out_per_sec: f64,
    pub(crate) failed_per_sec: f64,
    /// The age of the oldest job waiting, in ms.
    pub(crate) oldest_waiting_ms: Option<u64>,
    /// Whether the rates come from the event stream (else from the counts).
    pub(crate) from_events: bool,
}

impl Watched {
    pub(super) fn new(
        name: String,
        queue: Queue<AnyBackend>,
        tallies: Option<Arc<Tallies>>,
    ) -> Self {
        Self {
            name,
            queue,
            tallies,
            history: VecDeque::new(),
            row: Row::default(),
        }
    }

    /// Reads the queue again and updates its row.
    pub(super) async fn refresh(&mut self, now_ms: u64) -> Result<(), bullmq::Error> {
        let counts = self.queue.get_job_counts(&[]).await?;
        let mut c = Counts::default();
        for (state, n) in counts {
            let slot = match state.as_str() {
                "waiting" => &mut c.waiting,
                "prioritized" => &mut c.prioritized,
                "delayed" => &mut c.delayed,
                "active" => &mut c.active,
                "completed" => &mut c.completed,
                "failed" => &mut c.failed,
                "waiting-children" => &mut c.waiting_children,
                _ => continue,
            };
            *slot = n;
        }
        let paused = self.queue.is_paused().await?;
        let workers = self.queue.get_workers_count().await?;
        // The oldest job of the waiting list is its first in ascending order.
        let oldest = self
            .queue
            .get_jobs(
                &[JobType::State(JobState::Waiting)],
                Range {
                    start: 0,
                    end: 0,
                    asc: true,
                },
            )
            .await?;
        let oldest_waiting_ms = oldest.first().map(|j| now_ms.saturating_sub(j.timestamp));
        let totals = match &self.tallies {
            Some(t) => Totals {
                at: Instant::now(),
                jobs_in: t.added.load(Ordering::Relaxed),
                jobs_out: t.completed.load(Ordering::Relaxed) + t.failed.load(Ordering::Relaxed),
                failed: t.failed.load(Ordering::Relaxed),
            },
            // Without events: every job counted in, finished ones out (removed jobs are missed).
            None => Totals {
                at: Instant::now(),
                jobs_in: c.every_job(),
                jobs_out: c.completed + c.failed,
                failed: c.failed,
            },
        };
        let (in_per_sec, out_per_sec, failed_per_sec) = self.rates(totals);
        self.row = Row {
            paused,
            counts: c,
            workers: u64::try_from(workers).unwrap_or(u64::MAX),
            in_per_sec,
            out_per_sec,
            failed_per_sec,
            oldest_waiting_ms,
            from_events: self.tallies.is_some(),
        };
        Ok(())
    }

    /// Jobs per second in, out and failed over the last [`WINDOW`], with `now` added.
    fn rates(&mut self, now: Totals) -> (f64, f64, f64) {
        while self
            .history
            .front()
            .is_some_and(|first| now.at.duration_since(first.at) > WINDOW)
        {
            self.history.pop_front();
        }
        let rates = self.history.front().map_or((0.0, 0.0, 0.0), |first| {
            let secs = now.at.duration_since(first.at).as_secs_f64();
            if secs <= 0.0 {
                return (0.0, 0.0, 0.0);
            }
            let per_sec = |a: u64, b: u64| a.saturating_sub(b) as f64 / secs;
            (
                per_sec(now.jobs_in, first.jobs_in),
                per_sec(now.jobs_out, first.jobs_out),
                per_sec(now.failed, first.failed),
            )
        });
        self.history.push_back(now);
        rates
    }
}
