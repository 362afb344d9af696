//! The bounded scan: a store-neutral search, state by state and window by window, that stops
//! at a number of matches or of jobs read and says where to resume.

use super::{Needle, ScanCursor};
use crate::backend::{Queries, Range};
use crate::job::JobType;
use crate::{Error, Job, JobId, JobState, Queue, Result};

/// Job ids read per store call.
const WINDOW: u64 = 500;

/// What a [`scan`] looks at and when it stops.
#[derive(Debug, Clone)]
pub struct ScanRequest<'a> {
    /// The states searched, in this order (each from its newest job unless `asc`).
    pub states: &'a [JobState],
    /// Only jobs with exactly this name, when given.
    pub name: Option<&'a str>,
    /// Oldest first.
    pub asc: bool,
    /// Stop after this many matches.
    pub limit: usize,
    /// Stop after reading this many jobs.
    pub scan_limit: u64,
    /// Resume where an earlier scan of the same states stopped.
    pub from: Option<ScanCursor>,
}

/// A job that matched.
#[derive(Debug, Clone)]
pub struct Match {
    /// Its id.
    pub id: JobId,
    /// The state it was found in.
    pub state: JobState,
    /// The job, or `None` when its stored fields cannot be read (it then matched by id).
    pub job: Option<Job>,
}

/// What a [`scan`] found, and how far it looked.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// The matches, in the order read.
    pub matches: Vec<Match>,
    /// How many jobs were read.
    pub scanned: u64,
    /// How many jobs the states hold.
    pub total: u64,
    /// Where to resume, when the scan stopped before the end of the last state.
    pub next: Option<ScanCursor>,
}

/// Searches `queue`'s jobs in `request.states` for `needle`, reading at most
/// `request.scan_limit` jobs and keeping at most `request.limit` matches.
///
/// A job whose stored fields cannot be read (another runtime wrote them oddly) matches by
/// its id alone; a job removed meanwhile is passed over.
///
/// ```no_run
/// # async fn demo(queue: &bullmq_core::Queue<impl bullmq_core::backend::Backend>) -> bullmq_core::Result<()> {
/// use bullmq_core::JobState;
/// use bullmq_core::search::{Needle, ScanRequest, scan};
///
/// let needle = Needle::parse(r#"{"customer":"c-17"}"#).expect("not empty");
/// let request = ScanRequest {
///     states: &[JobState::Failed],
///     name: None,
///     asc: false,
///     limit: 20,
///     scan_limit: 10_000,
///     from: None,
/// };
/// let found = scan(queue, &needle, &request).await?;
/// println!("{} of {} read", found.scanned, found.total);
/// if let Some(next) = found.next {
///     println!("resume with {next}");
/// }
/// # Ok(()) }
/// ```
///
/// # Errors
/// The store's error when it cannot list or read the jobs.
pub async fn scan<B: Queries>(
    queue: &Queue<B>,
    needle: &Needle,
    request: &ScanRequest<'_>,
) -> Result<Found> {
    let states = request.states;
    let types: Vec<JobType> = states.iter().map(|s| JobType::State(*s)).collect();
    let mut found = Found {
        total: queue.get_job_count_by_types(&types).await?,
        ..Found::default()
    };
    let (mut at, mut offset) = match request.from {
        Some(c) => (
            states.iter().position(|s| *s == c.state).unwrap_or(0),
            c.offset,
        ),
        None => (0, 0),
    };
    while let Some(&state) = states.get(at) {
        if found.scanned >= request.scan_limit || found.matches.len() >= request.limit {
            found.next = Some(ScanCursor { state, offset });
            return Ok(found);
        }
        let window = WINDOW.min(request.scan_limit - found.scanned);
        let start = i64::try_from(offset).unwrap_or(i64::MAX);
        let range = Range {
            start,
            end: start.saturating_add(i64::try_from(window).unwrap_or(i64::MAX) - 1),
            asc: request.asc,
        };
        let ids = queue
            .backend()
            .get_ranges(&[JobType::State(state)], range)
            .await?;
        let read = ids.len() as u64;
        for id in ids {
            found.scanned += 1;
            offset += 1;
            if let Some(hit) = matched(queue, needle, request.name, id, state).await? {
                found.matches.push(hit);
                if found.matches.len() >= request.limit {
                    // Resume after this job (the rest of the window is read again).
                    found.next = Some(ScanCursor { state, offset });
                    return Ok(found);
                }
            }
        }
        if read < window {
            at += 1;
            offset = 0;
        }
    }
    Ok(found)
}

/// The job `id` as a match, if it is one.
async fn matched<B: Queries>(
    queue: &Queue<B>,
    needle: &Needle,
    name: Option<&str>,
    id: JobId,
    state: JobState,
) -> Result<Option<Match>> {
    let job = match queue.get_job(&id).await {
        Ok(Some(job)) => job,
        Ok(None) => return Ok(None),
        Err(Error::JobDecode(_)) => {
            let hit = name.is_none() && id.as_str() == needle.as_str() && needle.folded().is_some();
            return Ok(hit.then_some(Match {
                id,
                state,
                job: None,
            }));
        }
        Err(other) => return Err(other),
    };
    let hit =
        name.is_none_or(|n| n == job.name) && needle.matches(job.id.as_str(), &job.name, &job.data);
    Ok(hit.then_some(Match {
        id,
        state,
        job: Some(job),
    }))
}
