//! A processor over typed job data: the data decoded into `T`, the result any `R: Serialize`.

use std::future::Future;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::active_job::ActiveJob;
use super::processor::{JobError, ProcessResult, Processor, ReturnValue};

/// A [`Processor`] whose closure receives the job's data decoded into `T`; built with
/// [`typed`].
pub struct Typed<T, F> {
    run: F,
    data: PhantomData<fn() -> T>,
}

/// Wraps `run`, a closure over `(data: T, job, cancel)`, into a [`Processor`]: data that does
/// not decode into `T` fails the job for good (no retry would change it) with the path of
/// the field that did not fit, and never reaches `run`.
///
/// ```
/// use bullmq_core::worker::{ActiveJob, CancellationToken, JobError, typed};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize)]
/// struct Resize { width: u32 }
/// #[derive(Serialize)]
/// struct Thumbnail { width: u32 }
///
/// let processor = typed(|resize: Resize, _job: ActiveJob<()>, _cancel: CancellationToken| async move {
///     Ok::<_, JobError>(Thumbnail { width: resize.width / 4 })
/// });
/// # let _ = processor;
/// ```
pub fn typed<B, T, F, Fut, R>(run: F) -> Typed<T, F>
where
    F: Fn(T, ActiveJob<B>, CancellationToken) -> Fut,
    Fut: Future<Output = ProcessResult<R>>,
{
    Typed {
        run,
        data: PhantomData,
    }
}

/// Decodes `text` into `T`, or the failure naming the field path that did not fit.
fn decode<T: DeserializeOwned>(text: &str) -> Result<T, JobError> {
    let mut reader = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut reader).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        JobError::unrecoverable(format!(
            "the job's data does not fit {} at `{path}`: {inner}",
            std::any::type_name::<T>()
        ))
    })
}

impl<B, T, R, F, Fut> Processor<B> for Typed<T, F>
where
    B: Send + 'static,
    T: DeserializeOwned + Send + 'static,
    F: Fn(T, ActiveJob<B>, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ProcessResult<R>> + Send,
    R: Serialize,
{
    fn process(
        &self,
        job: ActiveJob<B>,
        cancel: CancellationToken,
    ) -> impl Future<Output = ProcessResult<ReturnValue>> + Send {
        let run = decode::<T>(&job.data).map(|data| (self.run)(data, job, cancel));
        async move {
            let value = run?.await?;
            ReturnValue::new(&value)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Order {
        items: Vec<Item>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Item {
        qty: u32,
    }

    #[test]
    fn a_mismatch_names_the_field_path() {
        let err = decode::<Order>(r#"{"items":[{"qty":1},{"qty":"two"}]}"#).unwrap_err();
        let JobError::Unrecoverable { message } = err else {
            panic!("not unrecoverable: {err:?}");
        };
        assert!(
            message.contains("at `items[1].qty`: invalid type: string \"two\""),
            "{message}"
        );
    }
}
