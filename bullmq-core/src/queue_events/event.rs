//! The typed events of a queue's event stream, decoded from the fields upstream's Lua scripts
//! write (`XADD … event <name> jobId <id> …`) the way Node.js' `QueueEvents` reads them.

use std::fmt;

use crate::JobId;
use crate::backend::{EventId, StreamEvent};

/// One event of the queue's stream, typed.
///
/// Field names follow upstream's stream fields; values are decoded as Node.js' `QueueEvents`
/// decodes them: `progress.data` and `completed.returnvalue` are JSON, `delayed.delay` is a
/// number, everything else is text. An event whose name upstream does not write is
/// [`Custom`](Self::Custom) (a `QueueEventsProducer`'s, or one from a newer release); a known
/// event whose fields cannot be decoded is [`Malformed`](Self::Malformed). Neither is an error:
/// the raw fields stay available in [`ReceivedEvent::fields`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum QueueEvent {
    /// A job was stored (`added`: `jobId`, `name`).
    Added {
        /// The job.
        job_id: JobId,
        /// The job's name.
        name: String,
    },
    /// A job is ready to run (`waiting`: `jobId`, `prev`? where it came from).
    Waiting {
        /// The job.
        job_id: JobId,
        /// The state it left (`active`, `delayed`, `waiting-children`, `failed`, …), when moved.
        prev: Option<String>,
    },
    /// A job is delayed (`delayed`: `jobId`, `delay` = when it is due, Unix ms).
    Delayed {
        /// The job.
        job_id: JobId,
        /// When it is due, Unix ms (upstream names it `delay`).
        delay: u64,
    },
    /// A worker took a job (`active`: `jobId`, `prev`).
    Active {
        /// The job.
        job_id: JobId,
        /// The state it left (`waiting`).
        prev: Option<String>,
    },
    /// A job reported progress (`progress`: `jobId`, `data` as JSON).
    Progress {
        /// The job.
        job_id: JobId,
        /// The progress, as the worker reported it.
        data: serde_json::Value,
    },
    /// A job completed (`completed`: `jobId`, `returnvalue` as JSON, `prev`).
    Completed {
        /// The job.
        job_id: JobId,
        /// What the processor returned.
        returnvalue: serde_json::Value,
        /// The state it left (`active`).
        prev: Option<String>,
    },
    /// A job failed for good (`failed`: `jobId`, `failedReason`, `prev`). A failed attempt that
    /// will be retried shows as `waiting` or `delayed` instead, as upstream writes it.
    Failed {
        /// The job.
        job_id: JobId,
        /// The error message.
        failed_reason: String,
        /// The state it left (`active`).
        prev: Option<String>,
    },
    /// A job failed its last attempt (`retries-exhausted`: `jobId`, `attemptsMade`).
    RetriesExhausted {
        /// The job.
        job_id: JobId,
        /// Attempts made.
        attempts_made: u64,
    },
    /// A job's lock expired while active; it went back to wait (`stalled`: `jobId`).
    Stalled {
        /// The job.
        job_id: JobId,
    },
    /// A job was removed (`removed`: `jobId`, `prev` = the state it was in).
    Removed {
        /// The job.
        job_id: JobId,
        /// The state it was removed from.
        prev: Option<String>,
    },
    /// An add was folded into an existing job by deduplication (`deduplicated`: `jobId` = the
    /// job that stays, `deduplicationId`, `deduplicatedJobId` = the id that was not added).
    Deduplicated {
        /// The job that holds the deduplication id.
        job_id: JobId,
        /// The deduplication id.
        deduplication_id: String,
        /// The job id the refused add asked for.
        deduplicated_job_id: JobId,
    },
    /// An add with an existing job id was ignored (`duplicated`: `jobId`).
    Duplicated {
        /// The existing job.
        job_id: JobId,
    },
    /// A job waits for its children (`waiting-children`: `jobId`, `prev`?).
    WaitingChildren {
        /// The job.
        job_id: JobId,
        /// The state it left (`active`), when moved.
        prev: Option<String>,
    },
    /// Jobs were cleaned (`cleaned`: `count`).
    Cleaned {
        /// How many.
        count: u64,
    },
    /// The queue has no more waiting jobs (`drained`).
    Drained,
    /// The queue was paused (`paused`).
    Paused,
    /// The queue was resumed (`resumed`).
    Resumed,
    /// An event upstream's scripts do not write: published by a `QueueEventsProducer` (either
    /// runtime) or by a newer release.
    Custom {
        /// The event's name (the `event` field).
        name: String,
        /// Its other fields, in stored order.
        fields: Vec<(String, String)>,
    },
    /// A known event whose fields could not be decoded (a missing `jobId`, JSON that does not
    /// parse, …), kept rather than dropped.
    Malformed {
        /// The event's name (empty when the entry has no `event` field).
        name: String,
        /// What could not be decoded.
        reason: String,
    },
}

/// An event as read: its stream id, its typed form and its raw fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedEvent {
    /// The entry's id; reading again from it resumes right after this event.
    pub id: EventId,
    /// The event, typed.
    pub event: QueueEvent,
    /// Every field of the entry as stored, `event` included, in stored order.
    pub fields: Vec<(String, String)>,
}

impl ReceivedEvent {
    /// Decodes one stream entry; never fails (see [`QueueEvent`]).
    #[must_use]
    pub fn decode(entry: StreamEvent) -> Self {
        let event = QueueEvent::from_fields(&entry.fields);
        Self {
            id: entry.id,
            event,
            fields: entry.fields,
        }
    }

    /// The raw value of a field, as stored.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&str> {
        field(&self.fields, name)
    }
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Why a known event did not decode.
struct Malformed(String);

impl QueueEvent {
    /// The stream name of this event (`completed`, `retries-exhausted`, a custom name, …).
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Self::Added { .. } => "added",
            Self::Waiting { .. } => "waiting",
            Self::Delayed { .. } => "delayed",
            Self::Active { .. } => "active",
            Self::Progress { .. } => "progress",
            Self::Completed { .. } => "completed",
            Self::Failed { .. } => "failed",
            Self::RetriesExhausted { .. } => "retries-exhausted",
            Self::Stalled { .. } => "stalled",
            Self::Removed { .. } => "removed",
            Self::Deduplicated { .. } => "deduplicated",
            Self::Duplicated { .. } => "duplicated",
            Self::WaitingChildren { .. } => "waiting-children",
            Self::Cleaned { .. } => "cleaned",
            Self::Drained => "drained",
            Self::Paused => "paused",
            Self::Resumed => "resumed",
            Self::Custom { name, .. } | Self::Malformed { name, .. } => name,
        }
    }

    /// The job the event is about, when it is about one (a custom event's `jobId` field
    /// counts too, as Node.js' `<event>:<jobId>` listeners see it).
    #[must_use]
    pub fn job_id(&self) -> Option<&str> {
        match self {
            Self::Added { job_id, .. }
            | Self::Waiting { job_id, .. }
            | Self::Delayed { job_id, .. }
            | Self::Active { job_id, .. }
            | Self::Progress { job_id, .. }
            | Self::Completed { job_id, .. }
            | Self::Failed { job_id, .. }
            | Self::RetriesExhausted { job_id, .. }
            | Self::Stalled { job_id }
            | Self::Removed { job_id, .. }
            | Self::Deduplicated { job_id, .. }
            | Self::Duplicated { job_id }
            | Self::WaitingChildren { job_id, .. } => Some(job_id.as_str()),
            Self::Custom { fields, .. } => field(fields, "jobId"),
            Self::Cleaned { .. }
            | Self::Drained
            | Self::Paused
            | Self::Resumed
            | Self::Malformed { .. } => None,
        }
    }

    /// Decodes the fields of one entry.
    #[must_use]
    pub fn from_fields(fields: &[(String, String)]) -> Self {
        let Some(name) = field(fields, "event") else {
            return Self::Malformed {
                name: String::new(),
                reason: "the entry has no `event` field".to_owned(),
            };
        };
        Self::decode(name, fields).unwrap_or_else(|Malformed(reason)| Self::Malformed {
            name: name.to_owned(),
            reason,
        })
    }

    fn decode(name: &str, fields: &[(String, String)]) -> Result<Self, Malformed> {
        let text = |key: &str| {
            field(fields, key)
                .map(str::to_owned)
                .ok_or_else(|| Malformed(format!("`{name}` has no `{key}` field")))
        };
        let job_id = || text("jobId").map(JobId::from);
        let prev = || field(fields, "prev").map(str::to_owned);
        let number = |key: &str| {
            let raw = text(key)?;
            raw.parse::<u64>()
                .map_err(|_| Malformed(format!("`{name}.{key}` is not a whole number: {raw:?}")))
        };
        let json = |key: &str| {
            let raw = text(key)?;
            serde_json::from_str::<serde_json::Value>(&raw)
                .map_err(|e| Malformed(format!("`{name}.{key}` is not JSON ({e}): {raw:?}")))
        };
        Ok(match name {
            "added" => Self::Added {
                job_id: job_id()?,
                name: text("name")?,
            },
            "waiting" => Self::Waiting {
                job_id: job_id()?,
                prev: prev(),
            },
            "delayed" => Self::Delayed {
                job_id: job_id()?,
                delay: number("delay")?,
            },
            "active" => Self::Active {
                job_id: job_id()?,
                prev: prev(),
            },
            "progress" => Self::Progress {
                job_id: job_id()?,
                data: json("data")?,
            },
            "completed" => Self::Completed {
                job_id: job_id()?,
                returnvalue: json("returnvalue")?,
                prev: prev(),
            },
            "failed" => Self::Failed {
                job_id: job_id()?,
                failed_reason: text("failedReason")?,
                prev: prev(),
            },
            "retries-exhausted" => Self::RetriesExhausted {
                job_id: job_id()?,
                attempts_made: number("attemptsMade")?,
            },
            "stalled" => Self::Stalled { job_id: job_id()? },
            "removed" => Self::Removed {
                job_id: job_id()?,
                prev: prev(),
            },
            "deduplicated" => Self::Deduplicated {
                job_id: job_id()?,
                deduplication_id: text("deduplicationId")?,
                deduplicated_job_id: JobId::from(text("deduplicatedJobId")?),
            },
            "duplicated" => Self::Duplicated { job_id: job_id()? },
            "waiting-children" => Self::WaitingChildren {
                job_id: job_id()?,
                prev: prev(),
            },
            "cleaned" => Self::Cleaned {
                count: number("count")?,
            },
            "drained" => Self::Drained,
            "paused" => Self::Paused,
            "resumed" => Self::Resumed,
            _ => Self::Custom {
                name: name.to_owned(),
                fields: fields
                    .iter()
                    .filter(|(k, _)| k != "event")
                    .cloned()
                    .collect(),
            },
        })
    }
}

impl fmt::Display for QueueEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.job_id() {
            Some(id) => write!(f, "{} (job {id})", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{QueueEvent, ReceivedEvent};
    use crate::JobId;
    use crate::backend::{EventId, StreamEvent};

    fn decode(pairs: &[(&str, &str)]) -> QueueEvent {
        let fields = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ReceivedEvent::decode(StreamEvent {
            id: EventId::new("1-0"),
            fields,
        })
        .event
    }

    #[test]
    fn upstream_events_decode_as_node_reads_them() {
        assert_eq!(
            decode(&[
                ("event", "completed"),
                ("jobId", "7"),
                ("returnvalue", r#"{"a":1}"#),
                ("prev", "active")
            ]),
            QueueEvent::Completed {
                job_id: JobId::from("7"),
                returnvalue: json!({"a": 1}),
                prev: Some("active".to_owned()),
            }
        );
        assert_eq!(
            decode(&[
                ("event", "delayed"),
                ("jobId", "x"),
                ("delay", "1700000000123")
            ]),
            QueueEvent::Delayed {
                job_id: JobId::from("x"),
                delay: 1_700_000_000_123,
            }
        );
        assert_eq!(
            decode(&[("event", "progress"), ("jobId", "1"), ("data", "50")]),
            QueueEvent::Progress {
                job_id: JobId::from("1"),
                data: json!(50),
            }
        );
        assert_eq!(decode(&[("event", "drained")]), QueueEvent::Drained);
        assert_eq!(
            decode(&[("event", "cleaned"), ("count", "3")]),
            QueueEvent::Cleaned { count: 3 }
        );
    }

    #[test]
    fn unknown_events_are_custom_and_broken_ones_malformed() {
        let custom = decode(&[("event", "example"), ("jobId", "9"), ("k", "v")]);
        assert_eq!(custom.name(), "example");
        assert_eq!(custom.job_id(), Some("9"));
        let broken = decode(&[("event", "completed"), ("jobId", "1"), ("returnvalue", "{")]);
        assert!(
            matches!(&broken, QueueEvent::Malformed { name, reason } if name == "completed" && reason.contains("not JSON"))
        );
        let no_id = decode(&[("event", "stalled")]);
        assert!(matches!(no_id, QueueEvent::Malformed { .. }));
        let bad_number = decode(&[("event", "delayed"), ("jobId", "1"), ("delay", "soon")]);
        assert!(matches!(bad_number, QueueEvent::Malformed { .. }));
        assert!(
            matches!(decode(&[("jobId", "1")]), QueueEvent::Malformed { name, .. } if name.is_empty())
        );
    }
}
