//! Autoscaling signals: read them, record them as gauges, answer KEDA's `metrics-api` scaler.

use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinHandle;

use super::Queue;
use crate::backend::{Queries, ScalingSignals};
use crate::options::ValidationError;
use crate::telemetry::metrics;
use crate::{Error, Result};

/// The JSON answer for an autoscaler (KEDA's `metrics-api` scaler reads one field of it with
/// `valueLocation`, e.g. `backlog`), from [`Queue::scaling_report`].
///
/// The field set is stable: `queue` (string), `backlog`, `waiting`, `prioritized`,
/// `delayed_due`, `active` (integers), `oldest_waiting_age_seconds` (a number, `0` when
/// nothing waits, so a scaler always reads a number) and `paused` (boolean), in that order.
/// See [`ScalingSignals`] for what each one counts.
///
/// ```
/// use bullmq_core::backend::{ScalingObservation, ScalingSignals};
/// use bullmq_core::ScalingReport;
///
/// let signals = ScalingSignals::from_observation(ScalingObservation {
///     waiting: 10,
///     prioritized: 2,
///     oldest_ready_timestamp: Some(6_800),
///     now_ms: 10_000,
///     ..ScalingObservation::default()
/// });
/// let report = ScalingReport::new("emails", &signals);
/// assert_eq!(
///     report.to_json(),
///     r#"{"queue":"emails","backlog":12,"waiting":10,"prioritized":2,"delayed_due":0,"active":0,"oldest_waiting_age_seconds":3.2,"paused":false}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ScalingReport {
    /// The queue's name.
    pub queue: String,
    /// [`ScalingSignals::backlog`].
    pub backlog: u64,
    /// [`ScalingSignals::waiting`].
    pub waiting: u64,
    /// [`ScalingSignals::prioritized`].
    pub prioritized: u64,
    /// [`ScalingSignals::delayed_due`].
    pub delayed_due: u64,
    /// [`ScalingSignals::active`].
    pub active: u64,
    /// [`ScalingSignals::oldest_waiting_age`] in seconds (ms precision), 0 when `None`.
    pub oldest_waiting_age_seconds: f64,
    /// [`ScalingSignals::paused`].
    pub paused: bool,
}

impl ScalingReport {
    /// The report of `signals` read for queue `queue`.
    #[must_use]
    pub fn new(queue: &str, signals: &ScalingSignals) -> Self {
        Self {
            queue: queue.to_owned(),
            backlog: signals.backlog,
            waiting: signals.waiting,
            prioritized: signals.prioritized,
            delayed_due: signals.delayed_due,
            active: signals.active,
            oldest_waiting_age_seconds: signals
                .oldest_waiting_age
                .unwrap_or_default()
                .as_secs_f64(),
            paused: signals.paused,
        }
    }

    /// The report as JSON text, to serve as the body of an HTTP answer.
    #[must_use]
    pub fn to_json(&self) -> String {
        // Strings, integers, a finite float and a bool: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The task [`Queue::report_scaling_signals`] started; dropping it (or [`stop`](Self::stop))
/// ends the task.
#[derive(Debug)]
#[must_use = "dropping the reporter stops it"]
pub struct ScalingReporter {
    task: JoinHandle<()>,
}

impl ScalingReporter {
    /// Stops reading the signals.
    pub fn stop(self) {
        // `Drop` aborts the task.
    }
}

impl Drop for ScalingReporter {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<B: Queries> Queue<B> {
    /// The queue's autoscaling signals (backlog, jobs in progress, oldest waiting age, paused),
    /// read in a bounded number of store operations, the same on Redis and PostgreSQL; also
    /// sets the gauges `bullmq.queue.backlog`, `bullmq.queue.oldest_waiting_age` (seconds) and
    /// `bullmq.queue.active`, labelled with the queue's name.
    ///
    /// Unlike counting the `wait` list alone, the backlog includes prioritized jobs and
    /// delayed jobs already due. See [`ScalingSignals`] for how the age is computed.
    ///
    /// Store work, with `k` = [`SCALING_LOOKAHEAD`](crate::backend::SCALING_LOOKAHEAD): on
    /// Redis one `MULTI` (`LLEN`, `ZCARD`, `ZCOUNT`, `HEXISTS`, and ranges of at most `k` ids
    /// from `wait` and from `prioritized`) and one pipelined round of at most `2k` `HGET`s,
    /// O(log n + k); on PostgreSQL one query whose counts walk the partial index of each
    /// counted state (linear in the waiting, due delayed and active jobs, never touching
    /// finished ones) and whose age reads at most `2k + 1` index entries.
    ///
    /// ```
    /// use bullmq_core::backend::Backend;
    /// use bullmq_core::Queue;
    ///
    /// async fn workers_wanted<B: Backend>(queue: &Queue<B>) -> bullmq_core::Result<u64> {
    ///     let signals = queue.scaling_signals().await?;
    ///     // One worker per 50 jobs ready or in progress, at least one while any waits.
    ///     Ok((signals.backlog + signals.active).div_ceil(50))
    /// }
    /// ```
    pub async fn scaling_signals(&self) -> Result<ScalingSignals> {
        let signals = self.backend.scaling_signals().await?;
        metrics::scaling_signals(self.name.as_str(), &signals);
        Ok(signals)
    }

    /// [`scaling_signals`](Self::scaling_signals) as the JSON answer an autoscaler reads
    /// (see [`ScalingReport`] for the fields), gauges set as well.
    ///
    /// ```
    /// use bullmq_core::backend::Backend;
    /// use bullmq_core::Queue;
    ///
    /// // The body of `GET /scaling` for KEDA's `metrics-api` scaler
    /// // (`valueLocation: backlog`).
    /// async fn scaling_body<B: Backend>(queue: &Queue<B>) -> bullmq_core::Result<String> {
    ///     Ok(queue.scaling_report().await?.to_json())
    /// }
    /// ```
    pub async fn scaling_report(&self) -> Result<ScalingReport> {
        let signals = self.scaling_signals().await?;
        Ok(ScalingReport::new(self.name.as_str(), &signals))
    }
}

impl<B: Queries + Clone + 'static> Queue<B> {
    /// Reads the scaling signals every `every` (the first time at once) on a task of the
    /// current Tokio runtime, so the gauges of
    /// [`scaling_signals`](Self::scaling_signals) stay current for a metrics exporter; a read
    /// that fails is logged (`warn`) and retried at the next tick. The task runs until the
    /// returned [`ScalingReporter`] is dropped.
    ///
    /// `every` must be at least 1 ms, and the call must be made inside a Tokio runtime;
    /// otherwise it is refused with [`Error::Invalid`] naming `every` or [`Error::Unsupported`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use bullmq_core::backend::Backend;
    /// use bullmq_core::Queue;
    ///
    /// async fn export<B: Backend>(queue: &Queue<B>) -> bullmq_core::Result<()> {
    ///     let _reporter = queue.report_scaling_signals(Duration::from_secs(15))?;
    ///     // … serve the metrics recorder's endpoint while `_reporter` lives …
    ///     Ok(())
    /// }
    /// ```
    pub fn report_scaling_signals(&self, every: Duration) -> Result<ScalingReporter> {
        if every < Duration::from_millis(1) {
            return Err(Error::Invalid(ValidationError::single(
                "scaling report",
                "every",
                format!(
                    "must be at least 1 ms (got {every:?}): pass how often to read the \
                     signals, e.g. Duration::from_secs(15)"
                ),
            )));
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::Unsupported {
            operation: "report_scaling_signals outside a Tokio runtime",
            backend: "any",
        })?;
        let queue = Queue::unchecked(self.name.clone(), self.backend.clone());
        let task = runtime.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(error) = queue.scaling_signals().await {
                    tracing::warn!(queue = %queue.name, %error, "reading the scaling signals failed");
                }
            }
        });
        Ok(ScalingReporter { task })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::ScalingReport;
    use crate::backend::{ScalingObservation, ScalingSignals};

    #[test]
    fn an_empty_queue_reports_zero_age() {
        let signals = ScalingSignals::from_observation(ScalingObservation {
            active: 2,
            paused: true,
            ..ScalingObservation::default()
        });
        assert_eq!(signals.oldest_waiting_age, None);
        let json: serde_json::Value =
            serde_json::from_str(&ScalingReport::new("q", &signals).to_json()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "queue": "q", "backlog": 0, "waiting": 0, "prioritized": 0, "delayed_due": 0,
                "active": 2, "oldest_waiting_age_seconds": 0.0, "paused": true
            })
        );
    }
}
