//! Why an upsert was refused, or failed.

use bullmq_cron::CronError;

/// An error of the job scheduler: bad input (refused before anything is written) or the
/// backend's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchedulerError {
    /// The cron pattern or its time zone is invalid.
    #[error("invalid job scheduler pattern: {0}")]
    Cron(#[from] CronError),
    /// Both `every` and `pattern` were given.
    #[error("invalid job scheduler: both `every` and `pattern` are set; give one of them")]
    EveryAndPattern,
    /// Neither `every` nor `pattern` was given (or `every` is 0).
    #[error(
        "invalid job scheduler: set `every` (a positive interval) or `pattern` (a cron pattern)"
    )]
    NoSchedule,
    /// `immediately` together with a start date.
    #[error("invalid job scheduler: `immediately` and `startDate` cannot be used together")]
    ImmediatelyWithStartDate,
    /// The end date is not after the start date.
    #[error("invalid job scheduler: end date {end_date} is not after start date {start_date}")]
    EndBeforeStart {
        /// Start date, Unix ms.
        start_date: u64,
        /// End date, Unix ms.
        end_date: u64,
    },
    /// The end date has already passed.
    #[error("invalid job scheduler: end date {end_date} is in the past (now {now})")]
    EndDateInPast {
        /// End date, Unix ms.
        end_date: u64,
        /// Now, Unix ms.
        now: u64,
    },
    /// The datastore refused or failed.
    #[error(transparent)]
    Backend(#[from] bullmq_core::Error),
}
