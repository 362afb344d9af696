//! A job too large for the server to take, refused before it is sent.

use std::fmt;

/// A job with a value larger than the server accepts in one argument (Redis's
/// `proto-max-bulk-len`, 512 MB unless configured): refused before anything is sent, so
/// nothing of it (or of its bulk) is written. Retrying it unchanged cannot succeed.
///
/// ```
/// use bullmq_core::error::PayloadTooLarge;
///
/// let err = PayloadTooLarge {
///     index: Some(3),
///     job_name: "report".to_owned(),
///     part: "data",
///     size: 2_000_000,
///     limit: 1_048_576,
///     setting: "proto-max-bulk-len",
/// };
/// assert!(err.to_string().contains("job 3 (report)"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PayloadTooLarge {
    /// The job's position in its bulk; `None` for a job added alone.
    pub index: Option<usize>,
    /// The job's name.
    pub job_name: String,
    /// Which part of the job is too large: `data`, `options` or `arguments` (name, parent,
    /// ids).
    pub part: &'static str,
    /// Its size in bytes, as it would be sent.
    pub size: u64,
    /// The largest size the server accepts, in bytes.
    pub limit: u64,
    /// The server setting that sets the limit.
    pub setting: &'static str,
}

impl fmt::Display for PayloadTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("job ")?;
        if let Some(index) = self.index {
            write!(f, "{index} ")?;
        }
        write!(
            f,
            "({}) was not sent: its {} is {} bytes, over the server's {} of {} bytes; make it \
             smaller (store the payload elsewhere and put a reference in the job) or raise {} \
             on the server",
            self.job_name, self.part, self.size, self.setting, self.limit, self.setting
        )
    }
}
