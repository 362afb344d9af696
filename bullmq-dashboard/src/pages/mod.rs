//! The pages: server-rendered HTML, readable without JavaScript.

pub(crate) mod bulk;
pub(crate) mod flow;
pub(crate) mod job;
pub(crate) mod layout;
pub(crate) mod metrics;
pub(crate) mod overview;
pub(crate) mod queue;
pub(crate) mod rows;
pub(crate) mod run;
pub(crate) mod schedulers;
pub(crate) mod workers;

use bullmq::job::JobState;
use bullmq::{AnyBackend, Queue, QueueName};

use crate::access::Access;
use crate::error::DashboardError;
use crate::request::Ctx;
use crate::state::{ConnEntry, Inner};

/// The states, in the order the pages list them.
pub(crate) const STATES: [JobState; 7] = [
    JobState::Waiting,
    JobState::Prioritized,
    JobState::Delayed,
    JobState::Active,
    JobState::WaitingChildren,
    JobState::Completed,
    JobState::Failed,
];

/// A queue the request may read: its connection, the queue, the access granted.
pub(crate) struct Opened<'a> {
    pub(crate) conn: &'a ConnEntry,
    pub(crate) name: QueueName,
    pub(crate) queue: Queue<AnyBackend>,
    pub(crate) access: Access,
}

/// Opens `queue` of `connection` for `ctx`: 404 when either is unknown or hidden from it.
pub(crate) async fn open<'a>(
    inner: &'a Inner,
    ctx: &Ctx,
    connection: &str,
    queue: &str,
) -> Result<Opened<'a>, DashboardError> {
    let conn = inner.connection(connection)?;
    let name = QueueName::new(queue).map_err(|_| DashboardError::NotFound)?;
    let access = inner.access(&ctx.parts, &conn.name, &name);
    if !access.can_read() {
        return Err(DashboardError::NotFound);
    }
    let queue = conn.queue(&name).await?;
    Ok(Opened {
        conn,
        name,
        queue,
        access,
    })
}

/// A Unix-ms time as UTC text, `-` for none.
pub(crate) fn time(ms: Option<u64>) -> String {
    let Some(ms) = ms.filter(|ms| *ms > 0) else {
        return "-".to_owned();
    };
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 as a civil date (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_read_as_utc() {
        assert_eq!(super::time(Some(1_700_000_000_000)), "2023-11-14 22:13:20");
        assert_eq!(super::time(None), "-");
    }
}
