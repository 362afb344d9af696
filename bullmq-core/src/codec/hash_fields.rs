//! A job to and from the fields of its Redis hash (`<prefix>:<queue>:<id>`).

use std::time::Duration;

use crate::codec::{self, KeyStyle};
use crate::job::{Job, JobDecodeError, JobId, ParentRef};

/// Field names of the job hash, as upstream's scripts write them.
pub(crate) mod field {
    pub(crate) const NAME: &str = "name";
    pub(crate) const DATA: &str = "data";
    pub(crate) const OPTS: &str = "opts";
    pub(crate) const TIMESTAMP: &str = "timestamp";
    pub(crate) const DELAY: &str = "delay";
    pub(crate) const PRIORITY: &str = "priority";
    pub(crate) const PARENT_KEY: &str = "parentKey";
    pub(crate) const PARENT: &str = "parent";
    pub(crate) const REPEAT_JOB_KEY: &str = "rjk";
    pub(crate) const DEDUPLICATION_ID: &str = "deid";
    pub(crate) const PROCESSED_ON: &str = "processedOn";
    pub(crate) const PROCESSED_BY: &str = "pb";
    pub(crate) const ATTEMPTS_STARTED: &str = "ats";
    pub(crate) const FINISHED_ON: &str = "finishedOn";
    pub(crate) const RETURN_VALUE: &str = "returnvalue";
    pub(crate) const FAILED_REASON: &str = "failedReason";
    pub(crate) const ATTEMPTS_MADE: &str = "atm";
    pub(crate) const LEGACY_ATTEMPTS_MADE: &str = "attemptsMade";
    pub(crate) const STACKTRACE: &str = "stacktrace";
    pub(crate) const PROGRESS: &str = "progress";
    pub(crate) const STALLED_COUNTER: &str = "stc";
    pub(crate) const DEFERRED_FAILURE: &str = "defa";
    pub(crate) const TELEMETRY_METADATA: &str = "tm";
}

/// Parses an integer field the way upstream's `parseInt` accepts what Lua wrote: decimal
/// text, or a number Lua printed in exponent form (`1.7e+12`), truncated toward zero.
fn int_field(id: &str, name: &'static str, raw: &str) -> Result<u64, JobDecodeError> {
    let raw = raw.trim();
    if let Ok(n) = raw.parse::<u64>() {
        return Ok(n);
    }
    match raw.parse::<f64>() {
        Ok(f) if (0.0..18_446_744_073_709_551_616.0).contains(&f) =>
        {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Ok(f.trunc() as u64)
        }
        _ => Err(JobDecodeError {
            job_id: id.to_owned(),
            field: name,
            reason: format!("expected an integer, found {raw:?}"),
        }),
    }
}

/// A signed integer field: `priority`, which Node.js stores unchecked, so a negative one is
/// possible and must read back as what it is.
fn signed_int_field(id: &str, name: &'static str, raw: &str) -> Result<i64, JobDecodeError> {
    if let Some(magnitude) = raw.trim().strip_prefix('-') {
        let n = int_field(id, name, magnitude)?;
        return i64::try_from(n).map(|n| -n).map_err(|_| JobDecodeError {
            job_id: id.to_owned(),
            field: name,
            reason: format!("-{n} is smaller than {}", i64::MIN + 1),
        });
    }
    let n = int_field(id, name, raw)?;
    i64::try_from(n).map_err(|_| JobDecodeError {
        job_id: id.to_owned(),
        field: name,
        reason: format!("{n} is larger than {}", i64::MAX),
    })
}

/// Whether `raw` is what Redis' `HINCRBY` accepts and a `u32` holds: canonical decimal digits,
/// no sign, no spaces, no leading zeros.
fn is_script_counter(raw: &str) -> bool {
    let canonical = !raw.is_empty()
        && raw.bytes().all(|b| b.is_ascii_digit())
        && (raw == "0" || !raw.starts_with('0'));
    canonical && raw.parse::<u32>().is_ok()
}

/// A counter (`atm`, `ats`, `stc`) as the scripts count it, never an error: Lua's `tonumber`
/// reads text that is not a number as nil, which the scripts treat as 0; a negative count is
/// 0 and one above `u32::MAX` is `u32::MAX`. [`hash_repairs`] rewrites such a field, since
/// `HINCRBY` on it would fail the script half way.
fn counter_field(raw: &str) -> u32 {
    let raw = raw.trim();
    if raw.starts_with('-') {
        return 0;
    }
    match int_field("", "", raw) {
        Ok(n) => u32::try_from(n).unwrap_or(u32::MAX),
        // Digits past u64: a count this large is as good as the largest.
        Err(_) if raw.parse::<f64>().is_ok_and(f64::is_finite) => u32::MAX,
        Err(_) => 0,
    }
}

/// A hash field the Lua scripts cannot work with as stored, and what to store instead
/// (`None`: delete the field). See [`hash_repairs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashRepair {
    /// The field.
    pub field: &'static str,
    /// What it held (lossy if it was not UTF-8).
    pub found: String,
    /// The text to store, or `None` to delete the field.
    pub value: Option<String>,
}

/// The fields of a job hash that would make upstream's scripts fail half way (after they moved
/// the job out of its list, so that it would be in no list at all), with the value to store
/// instead. We run the scripts verbatim, so a backend rewrites these before the next script
/// touches the job:
/// - `atm`, `ats`, `stc` that `HINCRBY` refuses (not an integer, negative, too large) are set
///   to the count [`Job::from_hash`] reads from them;
/// - a legacy `attemptsMade` that is not a count is deleted (`atm` is read instead; left in
///   place it would win over `atm` forever, and a failing job would be retried forever);
/// - a `parent` that is not a JSON object (the scripts `cjson.decode` it and index it) is
///   deleted; `parentKey` still names the parent.
///
/// ```
/// use bullmq_core::codec::hash_repairs;
///
/// let fixes = hash_repairs(&[("atm", "abc"), ("ats", "2"), ("parent", "{oops")]);
/// let fields: Vec<_> = fixes.iter().map(|r| (r.field, r.value.as_deref())).collect();
/// assert_eq!(fields, [("atm", Some("0")), ("parent", None)]);
/// ```
pub fn hash_repairs<K: AsRef<str>, V: AsRef<str>>(fields: &[(K, V)]) -> Vec<HashRepair> {
    let mut out = Vec::new();
    for (k, v) in fields {
        let (k, v) = (k.as_ref(), v.as_ref());
        let fix = |field: &'static str, value: Option<String>| HashRepair {
            field,
            found: v.to_owned(),
            value,
        };
        match k {
            field::ATTEMPTS_MADE | field::ATTEMPTS_STARTED | field::STALLED_COUNTER
                if !v.is_empty() && !is_script_counter(v) =>
            {
                let name = match k {
                    field::ATTEMPTS_MADE => field::ATTEMPTS_MADE,
                    field::ATTEMPTS_STARTED => field::ATTEMPTS_STARTED,
                    _ => field::STALLED_COUNTER,
                };
                out.push(fix(name, Some(counter_field(v).to_string())));
            }
            field::LEGACY_ATTEMPTS_MADE if !v.is_empty() && !is_script_counter(v) => {
                out.push(fix(field::LEGACY_ATTEMPTS_MADE, None));
            }
            field::PARENT
                if !v.is_empty()
                    && !matches!(
                        serde_json::from_str::<serde_json::Value>(v),
                        Ok(serde_json::Value::Object(_))
                    ) =>
            {
                out.push(fix(field::PARENT, None));
            }
            _ => {}
        }
    }
    out
}

fn json_field(
    id: &str,
    name: &'static str,
    raw: &str,
) -> Result<serde_json::Value, JobDecodeError> {
    serde_json::from_str(raw).map_err(|e| JobDecodeError {
        job_id: id.to_owned(),
        field: name,
        reason: format!("not JSON: {e}"),
    })
}

fn job_from_hash<K, V>(
    id: &str,
    fields: impl IntoIterator<Item = (K, V)>,
) -> Result<Job, JobDecodeError>
where
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut job = Job::new("", "{}".to_owned(), crate::JobOptions::default(), 0);
    job.id = JobId::from(id);
    let mut legacy_attempts = None;
    for (k, v) in fields {
        let (k, v) = (k.as_ref(), v.as_ref());
        // Node reads an empty field as missing (`raw.data || '{}'`, `raw.ats || '0'`, …); only
        // the texts it keeps as they are may be empty.
        if v.is_empty() && ![field::NAME, field::RETURN_VALUE, field::FAILED_REASON].contains(&k) {
            continue;
        }
        match k {
            field::NAME => job.name = v.to_owned(),
            field::DATA => {
                json_field(id, field::DATA, v)?;
                job.data = v.to_owned();
            }
            field::OPTS => {
                let decoded = codec::options_from_json(v).map_err(|e| JobDecodeError {
                    job_id: id.to_owned(),
                    field: field::OPTS,
                    reason: e.to_string(),
                })?;
                job.opts = decoded.options;
                job.invalid_opts = decoded.invalid;
            }
            field::TIMESTAMP => job.timestamp = int_field(id, field::TIMESTAMP, v)?,
            // Node accepts a negative delay and stores it; the job simply is not delayed.
            field::DELAY if v.trim().parse::<f64>().is_ok_and(|d| d < 0.0) => {
                job.delay = Duration::ZERO;
            }
            field::DELAY => job.delay = Duration::from_millis(int_field(id, field::DELAY, v)?),
            field::PRIORITY => job.priority = signed_int_field(id, field::PRIORITY, v)?,
            field::PROCESSED_ON => job.processed_on = Some(int_field(id, field::PROCESSED_ON, v)?),
            field::FINISHED_ON => job.finished_on = Some(int_field(id, field::FINISHED_ON, v)?),
            // Node keeps a return value that is not JSON as text; so do we.
            field::RETURN_VALUE => job.return_value = Some(v.to_owned()),
            field::FAILED_REASON => job.failed_reason = Some(v.to_owned()),
            // Counters read as the scripts count them (see `counter_field`), never an error: a
            // job whose count another runtime garbled still runs and still ends in a list.
            field::ATTEMPTS_MADE => job.attempts_made = counter_field(v),
            // Only a real count wins over `atm` (`hash_repairs` deletes any other).
            field::LEGACY_ATTEMPTS_MADE if is_script_counter(v) => {
                legacy_attempts = Some(counter_field(v));
            }
            field::LEGACY_ATTEMPTS_MADE => {}
            field::ATTEMPTS_STARTED => job.attempts_started = counter_field(v),
            field::STALLED_COUNTER => job.stalled_counter = counter_field(v),
            // Node reads an unparsable stacktrace as no stacktrace.
            field::STACKTRACE => job.stacktrace = serde_json::from_str(v).unwrap_or_default(),
            field::PROGRESS => job.progress = json_field(id, field::PROGRESS, v)?,
            field::PARENT_KEY => job.parent_key = Some(v.to_owned()),
            field::PARENT => {
                let parent: ParentRef = serde_json::from_str(v).map_err(|e| JobDecodeError {
                    job_id: id.to_owned(),
                    field: field::PARENT,
                    reason: format!("expected {{id, queueKey}}: {e}"),
                })?;
                job.parent = Some(parent);
            }
            field::REPEAT_JOB_KEY => job.repeat_job_key = Some(v.to_owned()),
            field::DEDUPLICATION_ID => job.deduplication_id = Some(v.to_owned()),
            field::PROCESSED_BY => job.processed_by = Some(v.to_owned()),
            field::DEFERRED_FAILURE => job.deferred_failure = Some(v.to_owned()),
            field::TELEMETRY_METADATA => job.telemetry_metadata = Some(v.to_owned()),
            _ => {}
        }
    }
    // Upstream reads `attemptsMade || atm` on the stored strings: a non-empty legacy field wins,
    // even "0".
    if let Some(legacy) = legacy_attempts {
        job.attempts_made = legacy;
    }
    Ok(job)
}

fn job_to_hash(job: &Job) -> Vec<(&'static str, String)> {
    let mut out = vec![
        (field::NAME, job.name.clone()),
        (field::DATA, job.data.clone()),
        (
            field::OPTS,
            codec::options_to_json(&job.opts, KeyStyle::Short),
        ),
        (field::TIMESTAMP, job.timestamp.to_string()),
        (field::DELAY, job.delay.as_millis().to_string()),
        (field::PRIORITY, job.priority.to_string()),
    ];
    let mut opt = |name: &'static str, value: Option<String>| {
        if let Some(v) = value {
            out.push((name, v));
        }
    };
    opt(field::PARENT_KEY, job.parent_key.clone());
    opt(
        field::PARENT,
        job.parent
            .as_ref()
            .and_then(|p| serde_json::to_string(p).ok()),
    );
    opt(field::REPEAT_JOB_KEY, job.repeat_job_key.clone());
    opt(field::DEDUPLICATION_ID, job.deduplication_id.clone());
    opt(field::PROCESSED_ON, job.processed_on.map(|n| n.to_string()));
    opt(field::PROCESSED_BY, job.processed_by.clone());
    opt(
        field::ATTEMPTS_STARTED,
        (job.attempts_started > 0).then(|| job.attempts_started.to_string()),
    );
    opt(field::FINISHED_ON, job.finished_on.map(|n| n.to_string()));
    opt(field::RETURN_VALUE, job.return_value.clone());
    opt(field::FAILED_REASON, job.failed_reason.clone());
    opt(
        field::ATTEMPTS_MADE,
        (job.attempts_made > 0).then(|| job.attempts_made.to_string()),
    );
    opt(
        field::STACKTRACE,
        (!job.stacktrace.is_empty())
            .then(|| serde_json::to_string(&job.stacktrace).unwrap_or_default()),
    );
    opt(
        field::PROGRESS,
        (job.progress != 0).then(|| crate::json::to_string(&job.progress).unwrap_or_default()),
    );
    opt(
        field::STALLED_COUNTER,
        (job.stalled_counter > 0).then(|| job.stalled_counter.to_string()),
    );
    opt(field::DEFERRED_FAILURE, job.deferred_failure.clone());
    opt(field::TELEMETRY_METADATA, job.telemetry_metadata.clone());
    out
}

/// The job hash is a stored shape: reading and writing it belongs to the codec, so the job
/// model itself knows no field names.
impl Job {
    /// Reads a job from its hash fields, as any runtime wrote them.
    ///
    /// Tolerates what Node.js tolerates (a missing `data` reads as `{}`, an unreadable
    /// `stacktrace` as none, a `returnvalue` that is not JSON is kept as text) and names the
    /// field of anything else.
    ///
    /// ```
    /// use bullmq_core::Job;
    ///
    /// let fields = [("name", "email"), ("data", r#"{"to":"a@b.c"}"#), ("opts", r#"{"attempts":3}"#),
    ///               ("timestamp", "1700000000000"), ("delay", "0"), ("priority", "0")];
    /// let job = Job::from_hash("1", fields)?;
    /// assert_eq!(job.opts.attempts, Some(3));
    ///
    /// let err = Job::from_hash("2", [("timestamp", "soon")]).unwrap_err();
    /// assert_eq!(err.to_string(), "job 2: field `timestamp`: expected an integer, found \"soon\"");
    /// # Ok::<(), bullmq_core::job::JobDecodeError>(())
    /// ```
    pub fn from_hash<K, V>(
        id: impl Into<String>,
        fields: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, JobDecodeError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        job_from_hash(&id.into(), fields)
    }

    /// The hash fields this job is stored as, in the order upstream's scripts write them.
    #[must_use]
    pub fn to_hash(&self) -> Vec<(&'static str, String)> {
        job_to_hash(self)
    }
}
