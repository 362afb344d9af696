//! A producer bound to one job data type: `queue.typed::<T>()`.

use std::marker::PhantomData;

use serde::Serialize;

use super::{BulkJob, Queue};
use crate::backend::{AddJobs, Lifecycle, QueueMeta};
use crate::{Job, JobOptions, Result};

/// A [`Queue`] whose jobs all carry data of type `T`: adding anything else is a compile
/// error. Pair it with a [`typed`](crate::worker::typed) processor over the same `T`.
///
/// ```
/// use bullmq_core::backend::Backend;
/// use bullmq_core::{JobOptions, Queue};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Resize { width: u32 }
///
/// async fn enqueue<B: Backend>(queue: Queue<B>) -> bullmq_core::Result<()> {
///     let resizes = queue.typed::<Resize>();
///     resizes.add("resize", &Resize { width: 320 }, JobOptions::new()).await?;
///     // resizes.add("resize", &"320", JobOptions::new()) does not compile.
///     Ok(())
/// }
/// ```
pub struct TypedQueue<B, T> {
    queue: Queue<B>,
    data: PhantomData<fn(&T)>,
}

impl<B> Queue<B> {
    /// This queue, bound to the job data type `T`.
    #[must_use]
    pub fn typed<T: Serialize>(self) -> TypedQueue<B, T> {
        TypedQueue {
            queue: self,
            data: PhantomData,
        }
    }
}

impl<B, T> TypedQueue<B, T> {
    /// The untyped queue, for its getters and admin methods.
    pub fn queue(&self) -> &Queue<B> {
        &self.queue
    }

    /// Gives the untyped queue back.
    pub fn into_inner(self) -> Queue<B> {
        self.queue
    }
}

impl<B: AddJobs + QueueMeta + Lifecycle, T: Serialize> TypedQueue<B, T> {
    /// [`Queue::add`] with data of type `T`.
    ///
    /// # Errors
    ///
    /// As [`Queue::add`].
    pub async fn add(&self, name: &str, data: &T, opts: JobOptions) -> Result<Job> {
        self.queue.add(name, data, opts).await
    }

    /// [`Queue::add_bulk`] with data of type `T`.
    ///
    /// # Errors
    ///
    /// As [`Queue::add_bulk`].
    pub async fn add_bulk(&self, jobs: Vec<BulkJob<T>>) -> Result<Vec<Job>> {
        self.queue.add_bulk(jobs).await
    }
}
