//! One place in a pool: a supervisor task that builds its worker, watches it, and builds a new
//! one when it stops on its own (see [`Supervision`](super::Supervision)).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{PoolEvent, PoolInner};
use crate::Error;
use crate::backend::Backend;
use crate::worker::{Processor, Worker};

/// Where a place keeps the worker it runs now (none while it is being (re)built).
type Slot<B, P> = Arc<Mutex<Option<Arc<Worker<B, P>>>>>;

/// A place in the pool and its supervisor.
pub(crate) struct Member<B: Backend, P: Processor<B>> {
    pub(crate) index: usize,
    /// The worker now in this place.
    pub(crate) worker: Slot<B, P>,
    /// Cancelled to take the place away: the supervisor closes its worker and ends.
    pub(crate) stop: CancellationToken,
    /// Ends with true when its last worker closed with every job finished in time.
    pub(crate) supervisor: JoinHandle<bool>,
}

impl<B: Backend, P: Processor<B>> Member<B, P> {
    /// Starts the supervisor of place `index`; `first` is told once the first worker runs or
    /// its first build failed.
    pub(crate) fn start(
        pool: &Arc<PoolInner<B, P>>,
        index: usize,
        first: watch::Sender<bool>,
    ) -> Self {
        let worker = Arc::new(Mutex::new(None));
        let stop = CancellationToken::new();
        let supervisor = tokio::spawn(supervise(
            Arc::clone(pool),
            index,
            Arc::clone(&worker),
            stop.clone(),
            first,
        ));
        Self {
            index,
            worker,
            stop,
            supervisor,
        }
    }

    /// The worker in this place now.
    pub(crate) fn current(&self) -> Option<Arc<Worker<B, P>>> {
        self.worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Takes the place away: its worker closes gracefully (within the pool's close timeout),
    /// and this returns once it has; true when its jobs finished in time.
    pub(crate) async fn stop(self) -> bool {
        self.stop.cancel();
        self.supervisor.await.unwrap_or(false)
    }
}

/// Resolves once `worker`'s connections have been unhealthy for `limit` without a break;
/// never with no limit.
async fn unhealthy_for<B: Backend, P: Processor<B>>(
    worker: &Worker<B, P>,
    limit: Option<Duration>,
) -> Arc<Error> {
    let Some(limit) = limit else {
        return std::future::pending().await;
    };
    let every = (limit / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut since = None;
    loop {
        tokio::time::sleep(every).await;
        if worker.connections_healthy() {
            since = None;
            continue;
        }
        let first = *since.get_or_insert_with(Instant::now);
        if first.elapsed() >= limit {
            return Arc::new(Error::Closed(
                "worker (its connections kept failing past the supervision's unhealthy_after)",
            ));
        }
    }
}

/// Builds the place's worker, waits for it to stop, and restarts it while the policy allows.
async fn supervise<B: Backend, P: Processor<B>>(
    pool: Arc<PoolInner<B, P>>,
    index: usize,
    slot: Slot<B, P>,
    stop: CancellationToken,
    first: watch::Sender<bool>,
) -> bool {
    let mut failures = 0u32;
    let mut finished = true;
    loop {
        let built = tokio::select! {
            built = pool.build_worker() => built,
            () = stop.cancelled() => break,
        };
        let cause = match built {
            Ok(worker) => {
                let worker = Arc::new(worker);
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&worker));
                pool.emit(PoolEvent::Started { index });
                first.send_replace(true);
                let ended = tokio::select! {
                    ended = worker.stopped() => ended,
                    () = stop.cancelled() => Ok(()),
                    cause = unhealthy_for(&worker, pool.supervision.unhealthy_after) => Err(cause),
                };
                slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                // Closing is graceful in both cases: jobs in flight finish (or are left to the
                // stalled check past the close timeout).
                finished = worker.close_timeout(pool.close_timeout()).await;
                match ended {
                    Ok(()) if stop.is_cancelled() => break,
                    // Closed from outside the pool (`pool.workers()` hands the workers out):
                    // the place stays, so it is filled again as after any other stop.
                    Ok(()) => {
                        failures = 0;
                        Arc::new(Error::Closed("pool worker (closed from outside its pool)"))
                    }
                    Err(cause) => {
                        failures = 0;
                        cause
                    }
                }
            }
            Err(err) => {
                first.send_replace(true);
                Arc::new(err)
            }
        };
        if stop.is_cancelled() {
            break;
        }
        failures = failures.saturating_add(1);
        if !pool.allow_restart(Instant::now()) {
            pool.fail(index, &cause);
            break;
        }
        let delay = pool.supervision.delay(failures);
        tracing::warn!(
            target: "bullmq",
            queue = %pool.queue.name(),
            index,
            error = %cause,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            "pool worker stopped: restarting it"
        );
        crate::telemetry::metrics::pool_restart(pool.queue.name().as_str());
        pool.emit(PoolEvent::Restarting {
            index,
            error: cause,
            delay,
        });
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = stop.cancelled() => break,
        }
    }
    first.send_replace(true);
    pool.emit(PoolEvent::Stopped { index });
    finished
}
