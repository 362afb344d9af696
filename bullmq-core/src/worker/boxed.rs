//! [`BoxProcessor`]: any processor behind one nameable type, so that workers running
//! different processors (closures included) fit in one `Vec`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::active_job::ActiveJob;
use super::processor::{ProcessResult, Processor, ReturnValue};

/// The future of a boxed processor.
type Boxed<'a> = Pin<Box<dyn Future<Output = ProcessResult<ReturnValue>> + Send + 'a>>;

/// [`Processor`] is not object-safe (its future is `impl Future`); this is its object-safe
/// twin, implemented for every processor.
trait DynProcessor<B: 'static>: Send + Sync + 'static {
    fn process_boxed(&self, job: ActiveJob<B>, cancel: CancellationToken) -> Boxed<'_>;
}

impl<B: 'static, P: Processor<B>> DynProcessor<B> for P {
    fn process_boxed(&self, job: ActiveJob<B>, cancel: CancellationToken) -> Boxed<'_> {
        Box::pin(self.process(job, cancel))
    }
}

/// A processor of any type, boxed: `Worker<B, BoxProcessor<B>>` is one type whatever each
/// worker runs. It costs one allocation per job (the boxed future).
///
/// ```no_run
/// # async fn demo<B: bullmq_core::backend::Backend>(backend: B) -> bullmq_core::Result<()> {
/// use bullmq_core::worker::{ActiveJob, BoxProcessor, CancellationToken, Worker, WorkerOptions};
/// use bullmq_core::{Queue, QueueName};
///
/// let emails = BoxProcessor::new(|_job: ActiveJob<B>, _: CancellationToken| async {
///     Ok(serde_json::json!("sent"))
/// });
/// let images = BoxProcessor::new(|job: ActiveJob<B>, _: CancellationToken| async move {
///     Ok(serde_json::json!({ "resized": job.id.to_string() }))
/// });
/// let mut workers: Vec<Worker<B, BoxProcessor<B>>> = Vec::new();
/// for (queue, processor) in [("emails", emails), ("images", images)] {
///     let queue = Queue::from_backend(backend.for_queue(&QueueName::new(queue)?, None))?;
///     workers.push(Worker::builder(queue, processor).options(WorkerOptions::new()).build().await?);
/// }
/// # Ok(()) }
/// ```
pub struct BoxProcessor<B: 'static> {
    inner: Arc<dyn DynProcessor<B>>,
}

impl<B: 'static> Clone for BoxProcessor<B> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<B: 'static> std::fmt::Debug for BoxProcessor<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoxProcessor").finish_non_exhaustive()
    }
}

impl<B: 'static> BoxProcessor<B> {
    /// Boxes `processor` (a closure or any [`Processor`]).
    pub fn new(processor: impl Processor<B>) -> Self {
        Self {
            inner: Arc::new(processor),
        }
    }
}

impl<B: 'static> Processor<B> for BoxProcessor<B> {
    fn process(
        &self,
        job: ActiveJob<B>,
        cancel: CancellationToken,
    ) -> impl Future<Output = ProcessResult<ReturnValue>> + Send {
        self.inner.process_boxed(job, cancel)
    }
}
