//! What every producer of a queue's jobs starts from, as a Node.js `Queue` holds it: the
//! options jobs start from and the queue's `meta`, written once. Shared by [`Queue`] and
//! anything else that stands for one (the job scheduler's upsert goes through a `Queue` in
//! Node.js).

use super::{Queue, QueueMetaWriter};
use crate::backend::QueueMeta;
use crate::{JobOptions, Result};

/// The options every job of a producer starts from (upstream: `defaultJobOptions`) and the
/// writer of its queue's `meta` (`streams.events.maxLen`, `version`).
///
/// ```
/// use bullmq_core::{JobOptions, ProducerSettings};
///
/// let settings = ProducerSettings::default()
///     .default_job_options(JobOptions::new().attempts(3).lifo(true))
///     .max_len_events(500);
/// let opts = settings.job_options(JobOptions::new().attempts(5));
/// assert_eq!((opts.attempts, opts.lifo), (Some(5), Some(true)));
/// assert_eq!(settings.meta().max_len_events(), 500);
/// ```
#[derive(Debug, Default)]
pub struct ProducerSettings {
    defaults: Option<JobOptions>,
    meta: QueueMetaWriter,
}

impl ProducerSettings {
    /// The approximate length the event stream is trimmed to, written into the queue's meta
    /// (upstream: `streams.events.maxLen`, 10,000 by default).
    #[must_use]
    pub fn max_len_events(mut self, max: u64) -> Self {
        self.meta = QueueMetaWriter::new(max);
        self
    }

    /// Options every job starts from; a job's own options win, field by field, as in Node.js.
    #[must_use]
    pub fn default_job_options(mut self, defaults: JobOptions) -> Self {
        self.defaults = Some(defaults);
        self
    }

    /// `opts` over the default options (Node's `{...defaultJobOptions, ...opts}`).
    #[must_use]
    pub fn job_options(&self, opts: JobOptions) -> JobOptions {
        match &self.defaults {
            Some(defaults) => opts.or(defaults),
            None => opts,
        }
    }

    /// The writer of the queue's meta.
    #[must_use]
    pub fn meta(&self) -> &QueueMetaWriter {
        &self.meta
    }

    /// Writes the queue's meta on `backend` unless these settings already did.
    ///
    /// # Errors
    ///
    /// A backend failure; the next call tries again.
    pub async fn write_meta<B: QueueMeta>(&self, backend: &B) -> Result<()> {
        self.meta.write(backend).await
    }

    /// The same options, with a meta writer of its own that has not written yet.
    pub(crate) fn duplicate(&self) -> Self {
        Self {
            defaults: self.defaults.clone(),
            meta: QueueMetaWriter::new(self.meta.max_len_events()),
        }
    }
}

impl<B> Queue<B> {
    /// The settings this queue's jobs start from.
    #[must_use]
    pub fn producer_settings(&self) -> &ProducerSettings {
        &self.producer
    }
}
