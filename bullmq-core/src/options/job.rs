//! `JobOptions`: every option of Node.js BullMQ's `JobsOptions`, typed.

use std::collections::BTreeMap;
use std::time::Duration;

use super::validation::{Problem, ValidationError};
use super::{
    Backoff, Deduplication, KeepJobs, KeyOrder, ParentOptions, RepeatOptions, Telemetry, UnixMillis,
};
use crate::job::JobId;

/// The highest priority upstream accepts: `2^21 - 1`.
pub const PRIORITY_LIMIT: u32 = (1 << 21) - 1;

/// Options of one job, as `queue.add(name, data, opts)` takes them in Node.js.
///
/// Every field is optional; `None` means "not set", which is not always the same as the
/// default value, because Node.js stores only what was set (an explicit `lifo: false` is
/// stored, an absent one is not). Setters are consuming and named after the field.
///
/// ```
/// use std::time::Duration;
/// use bullmq_core::JobOptions;
/// use bullmq_core::options::{Backoff, KeepJobs};
///
/// let opts = JobOptions::new()
///     .delay(Duration::from_secs(10))
///     .attempts(5)
///     .backoff(Backoff::exponential(Duration::from_secs(1)))
///     .remove_on_complete(KeepJobs::Number(1000));
/// opts.validate()?;
/// # Ok::<(), bullmq_core::options::ValidationError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, garde::Validate)]
pub struct JobOptions {
    /// Total attempts before the job fails for good (`attempts`). Node.js stores 0 when unset.
    #[garde(skip)]
    pub attempts: Option<u32>,
    /// Custom job id (`jobId`); see [`JobId::custom`] for the rules.
    #[garde(skip)]
    pub job_id: Option<JobId>,
    /// Creation time, Unix ms (`timestamp`); now when unset.
    #[garde(skip)]
    pub timestamp: Option<u64>,
    /// 1 (highest) to 2 097 151; 0 or unset means no priority, served before prioritized jobs.
    #[garde(custom(priority_in_range))]
    pub priority: Option<u32>,
    /// Wait this long before the job can run (`delay`).
    #[garde(skip)]
    pub delay: Option<Duration>,
    /// Retry backoff (`backoff`).
    #[garde(dive)]
    pub backoff: Option<Backoff>,
    /// Add to the front of the line instead of the back (`lifo`).
    #[garde(skip)]
    pub lifo: Option<bool>,
    /// Retention once completed (`removeOnComplete`).
    #[garde(skip)]
    pub remove_on_complete: Option<KeepJobs>,
    /// Retention once failed for good (`removeOnFail`).
    #[garde(skip)]
    pub remove_on_fail: Option<KeepJobs>,
    /// Keep at most this many log lines (`keepLogs`, stored as `kl`).
    #[garde(skip)]
    pub keep_logs: Option<u32>,
    /// Keep at most this many stack traces (`stackTraceLimit`).
    #[garde(skip)]
    pub stack_trace_limit: Option<u32>,
    /// Largest accepted size of the JSON data, in UTF-8 bytes (`sizeLimit`); 0 means no limit.
    #[garde(skip)]
    pub size_limit: Option<u64>,
    /// The parent job, for a child in a flow (`parent`).
    #[garde(dive)]
    pub parent: Option<ParentOptions>,
    /// Fail the parent when this job fails for good (`failParentOnFailure`, `fpof`).
    #[garde(skip)]
    pub fail_parent_on_failure: Option<bool>,
    /// Start the parent as soon as this job fails (`continueParentOnFailure`, `cpof`).
    #[garde(skip)]
    pub continue_parent_on_failure: Option<bool>,
    /// Record the failure in the parent and carry on (`ignoreDependencyOnFailure`, `idof`).
    #[garde(skip)]
    pub ignore_dependency_on_failure: Option<bool>,
    /// Drop this dependency from the parent on failure (`removeDependencyOnFailure`, `rdof`).
    #[garde(skip)]
    pub remove_dependency_on_failure: Option<bool>,
    /// Deduplication (`deduplication`, `de`).
    #[garde(dive)]
    pub deduplication: Option<Deduplication>,
    /// Telemetry context (`tm`, `omc`).
    #[garde(skip)]
    pub telemetry: Option<Telemetry>,
    /// Repeat settings of a scheduler-produced job (`repeat`).
    #[garde(skip)]
    pub repeat: Option<RepeatOptions>,
    /// Previous iteration of a scheduler-produced job, Unix ms (`prevMillis`).
    #[garde(skip)]
    pub prev_millis: Option<u64>,
    /// Options this version does not know (or could not decode), kept verbatim under their
    /// stored key so that nothing another runtime wrote is lost.
    #[garde(skip)]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// The order the options are written in: for options read from a store the order they
    /// were stored in, written back as Node.js writes back a job's options; for options built
    /// with setters the order the setters were called in, as a JavaScript object keeps the
    /// order its keys were written in (see [`KeyOrder`]). Ignored by `==`.
    #[garde(skip)]
    pub key_order: KeyOrder,
}

// garde hands custom validators a reference to the field's type.
#[allow(clippy::ref_option, clippy::trivially_copy_pass_by_ref)]
fn priority_in_range(priority: &Option<u32>, _ctx: &()) -> garde::Result {
    match priority {
        Some(p) if *p > PRIORITY_LIMIT => Err(garde::Error::new(format!(
            "must be between 0 and {PRIORITY_LIMIT} (got {p})"
        ))),
        _ => Ok(()),
    }
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($key:literal): $ty:ty),* $(,)?) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub fn $name(self, value: $ty) -> Self {
                self.set($key, |o| o.$name = Some(value))
            }
        )*
    };
}

/// Setters of instants: each takes Unix ms as a `u64`, a `SystemTime` or a `chrono::DateTime`
/// and stores its Unix ms in `$field`.
macro_rules! instant_setters {
    ($($(#[$doc:meta])* $name:ident($key:literal) => $field:ident),* $(,)?) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub fn $name(self, at: impl Into<UnixMillis>) -> Self {
                let at = at.into().get();
                self.set($key, |o| o.$field = Some(at))
            }
        )*
    };
}

impl JobOptions {
    /// No options set.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    setters! {
        /// Sets `attempts`.
        attempts("attempts"): u32,
        /// Sets `priority`.
        priority("priority"): u32,
        /// Sets `delay`.
        delay("delay"): Duration,
        /// Sets `backoff`.
        backoff("backoff"): Backoff,
        /// Sets `lifo`.
        lifo("lifo"): bool,
        /// Sets `removeOnComplete`.
        remove_on_complete("removeOnComplete"): KeepJobs,
        /// Sets `removeOnFail`.
        remove_on_fail("removeOnFail"): KeepJobs,
        /// Sets `keepLogs`.
        keep_logs("keepLogs"): u32,
        /// Sets `stackTraceLimit`.
        stack_trace_limit("stackTraceLimit"): u32,
        /// Sets `sizeLimit` (bytes).
        size_limit("sizeLimit"): u64,
        /// Sets `parent`.
        parent("parent"): ParentOptions,
        /// Sets `failParentOnFailure`.
        fail_parent_on_failure("failParentOnFailure"): bool,
        /// Sets `continueParentOnFailure`.
        continue_parent_on_failure("continueParentOnFailure"): bool,
        /// Sets `ignoreDependencyOnFailure`.
        ignore_dependency_on_failure("ignoreDependencyOnFailure"): bool,
        /// Sets `removeDependencyOnFailure`.
        remove_dependency_on_failure("removeDependencyOnFailure"): bool,
        /// Sets `deduplication`.
        deduplication("deduplication"): Deduplication,
        /// Sets `telemetry`.
        telemetry("telemetry"): Telemetry,
        /// Sets `timestamp` (Unix ms).
        #[deprecated(
            since = "0.2.0",
            note = "use the typed `created_at(..)`: Unix ms as a `u64`, a `SystemTime` or a `chrono::DateTime`"
        )]
        timestamp("timestamp"): u64,
        /// Sets `prevMillis` (Unix ms; scheduler-produced jobs only).
        #[deprecated(
            since = "0.2.0",
            note = "use the typed `prev_run_at(..)`: Unix ms as a `u64`, a `SystemTime` or a `chrono::DateTime`"
        )]
        prev_millis("prevMillis"): u64,
    }

    instant_setters! {
        /// Sets the job's creation time (`timestamp`): Unix ms as a `u64`, a
        /// [`SystemTime`](std::time::SystemTime) or a [`chrono::DateTime`] (see
        /// [`UnixMillis`]). Unset, the job is created now.
        ///
        /// ```
        /// use std::time::{Duration, UNIX_EPOCH};
        /// use bullmq_core::JobOptions;
        ///
        /// let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        /// let opts = JobOptions::new().created_at(at);
        /// assert_eq!(opts.timestamp, Some(1_700_000_000_000));
        /// assert_eq!(opts, JobOptions::new().created_at(1_700_000_000_000_u64));
        /// ```
        created_at("timestamp") => timestamp,
        /// Sets the previous iteration of a scheduler-produced job (`prevMillis`), typed as
        /// [`created_at`](Self::created_at) is. The scheduler sets it; a job added by hand
        /// does not need it.
        ///
        /// ```
        /// use std::time::{Duration, UNIX_EPOCH};
        /// use bullmq_core::JobOptions;
        ///
        /// let opts = JobOptions::new().prev_run_at(UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        /// assert_eq!(opts.prev_millis, Some(1_700_000_000_000));
        /// ```
        prev_run_at("prevMillis") => prev_millis,
    }

    /// Sets an option with `write` and notes its key in [`key_order`](Self::key_order) (a key
    /// set again keeps its place, as in a JavaScript object).
    fn set(mut self, key: &str, write: impl FnOnce(&mut Self)) -> Self {
        write(&mut self);
        self.key_order.push(key, KeyOrder::default());
        self
    }

    /// Sets `repeat` (scheduler-produced jobs only), in the order its own setters were called.
    #[must_use]
    pub fn repeat(mut self, value: RepeatOptions) -> Self {
        self.key_order.set_child("repeat", value.key_order.clone());
        self.repeat = Some(value);
        self
    }

    /// Sets a custom `jobId`; [`validate`](Self::validate) checks it. An empty id means "no
    /// custom id", as in Node.js: the datastore generates one.
    #[must_use]
    pub fn job_id(self, id: impl Into<String>) -> Self {
        let id = JobId::from(id.into());
        self.set("jobId", |o| o.job_id = Some(id))
    }

    /// These options over `defaults`, field by field: a field set here wins (Node.js merges a
    /// queue's `defaultJobOptions` the same way, shallowly). Unknown options merge by key; the
    /// keys are written as `{...defaults, ...self}` orders them.
    #[must_use]
    pub fn or(self, defaults: &Self) -> Self {
        let d = defaults.clone();
        let mut extra = d.extra;
        extra.extend(self.extra);
        Self {
            attempts: self.attempts.or(d.attempts),
            job_id: self.job_id.or(d.job_id),
            timestamp: self.timestamp.or(d.timestamp),
            priority: self.priority.or(d.priority),
            delay: self.delay.or(d.delay),
            backoff: self.backoff.or(d.backoff),
            lifo: self.lifo.or(d.lifo),
            remove_on_complete: self.remove_on_complete.or(d.remove_on_complete),
            remove_on_fail: self.remove_on_fail.or(d.remove_on_fail),
            keep_logs: self.keep_logs.or(d.keep_logs),
            stack_trace_limit: self.stack_trace_limit.or(d.stack_trace_limit),
            size_limit: self.size_limit.or(d.size_limit),
            parent: self.parent.or(d.parent),
            fail_parent_on_failure: self.fail_parent_on_failure.or(d.fail_parent_on_failure),
            continue_parent_on_failure: self
                .continue_parent_on_failure
                .or(d.continue_parent_on_failure),
            ignore_dependency_on_failure: self
                .ignore_dependency_on_failure
                .or(d.ignore_dependency_on_failure),
            remove_dependency_on_failure: self
                .remove_dependency_on_failure
                .or(d.remove_dependency_on_failure),
            deduplication: self.deduplication.or(d.deduplication),
            telemetry: self.telemetry.or(d.telemetry),
            repeat: self.repeat.or(d.repeat),
            prev_millis: self.prev_millis.or(d.prev_millis),
            extra,
            key_order: if self.key_order.is_empty() {
                d.key_order
            } else if d.key_order.is_empty() {
                self.key_order
            } else {
                KeyOrder::spread(&d.key_order, &self.key_order)
            },
        }
    }

    /// Whether the job starts delayed: Node.js adds it through the delayed path when
    /// `typeof delay == 'number' && delay > 0`, also for a value we keep raw in `extra`.
    #[must_use]
    pub fn is_delayed(&self) -> bool {
        match self.delay {
            Some(d) => !d.is_zero(),
            None => self.raw_number("delay").is_some_and(|d| d > 0.0),
        }
    }

    /// Whether the job goes to the prioritized set: Node.js checks that `priority` is truthy,
    /// so a (raw) negative priority counts too.
    #[must_use]
    pub fn is_prioritized(&self) -> bool {
        match self.priority {
            Some(p) => p > 0,
            None => self.raw_number("priority").is_some_and(|p| p != 0.0),
        }
    }

    fn raw_number(&self, key: &str) -> Option<f64> {
        self.extra.get(key).and_then(serde_json::Value::as_f64)
    }

    /// Fills the defaults Node.js writes into every job's options (`attempts: 0`, first in
    /// the key order, as Node's `Job` constructor puts it), so that a job added from Rust
    /// stores the same options as its Node.js twin.
    #[must_use]
    pub fn with_node_defaults(mut self) -> Self {
        // A stored `attempts` we could not type (kept in `extra`) is still Node's value.
        if !self.extra.contains_key("attempts") {
            self.attempts.get_or_insert(0);
        }
        // Node's `Job` constructor: `{attempts: 0, ...opts}` puts `attempts` first, also
        // before the options set after this call.
        self.key_order.push("attempts", KeyOrder::default());
        self.key_order.move_to_front("attempts");
        self
    }

    /// Checks every rule Node.js BullMQ applies when a job is added, except `sizeLimit`, which
    /// needs the data (see [`check_data_size`](Self::check_data_size)).
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut extra = Vec::new();
        let mut problem = |path: &str, message: String| extra.push(Problem::new(path, message));
        // An empty id is no custom id (Node checks `if (opts.jobId)`); the store generates one.
        let custom = self.job_id.as_ref().filter(|id| !id.as_str().is_empty());
        if let Some(Err(err)) = custom.map(|id| JobId::custom(id.as_str())) {
            for p in err.problems() {
                problem("jobId", p.message.clone());
            }
        }
        for (path, keep) in [
            ("removeOnComplete", &self.remove_on_complete),
            ("removeOnFail", &self.remove_on_fail),
        ] {
            if let Some(message) = keep.as_ref().and_then(KeepJobs::problem) {
                problem(path, message);
            }
        }
        let exclusive: Vec<&str> = [
            (
                "removeDependencyOnFailure",
                self.remove_dependency_on_failure,
            ),
            ("failParentOnFailure", self.fail_parent_on_failure),
            ("continueParentOnFailure", self.continue_parent_on_failure),
            (
                "ignoreDependencyOnFailure",
                self.ignore_dependency_on_failure,
            ),
        ]
        .into_iter()
        .filter_map(|(name, on)| (on == Some(true)).then_some(name))
        .collect();
        if exclusive.len() > 1 {
            problem(
                exclusive[0],
                format!("cannot be used together with {}", exclusive[1..].join(", ")),
            );
        }
        if self.deduplication.is_some() && self.parent.is_some() {
            problem(
                "deduplication",
                "cannot be used together with parent".to_owned(),
            );
        }
        if self.extra.contains_key("debounce") {
            problem(
                "debounce",
                "was removed in BullMQ 6; use deduplication".to_owned(),
            );
        }
        ValidationError::check("job options", garde::Validate::validate(self), extra)
    }

    /// Checks `sizeLimit` against the job's data as it will be stored (its JSON text).
    ///
    /// ```
    /// use bullmq_core::JobOptions;
    ///
    /// let opts = JobOptions::new().size_limit(8);
    /// assert!(opts.check_data_size("resize", r#"{"a":1}"#).is_ok());
    /// let err = opts.check_data_size("resize", r#"{"a":"long"}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid job options: sizeLimit: the data of job resize is 12 bytes, over the limit of 8");
    /// ```
    pub fn check_data_size(&self, job_name: &str, data_json: &str) -> Result<(), ValidationError> {
        match self.size_limit {
            // Node checks `sizeLimit && size > sizeLimit`: 0 means no limit.
            Some(limit)
                if limit > 0 && u64::try_from(data_json.len()).unwrap_or(u64::MAX) > limit =>
            {
                Err(ValidationError::single(
                    "job options",
                    "sizeLimit",
                    format!(
                        "the data of job {job_name} is {} bytes, over the limit of {limit}",
                        data_json.len()
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn keys(o: &JobOptions) -> Vec<&str> {
        o.key_order.keys().collect()
    }

    #[test]
    fn setters_record_their_order_and_a_key_set_again_keeps_its_place() {
        let opts = JobOptions::new()
            .priority(1)
            .job_id("a")
            .delay(Duration::ZERO)
            .priority(2)
            .repeat(RepeatOptions::new().tz("UTC").pattern("* * * * *"));
        assert_eq!(keys(&opts), ["priority", "jobId", "delay", "repeat"]);
        let repeat = opts.key_order.child("repeat").unwrap();
        assert_eq!(repeat.keys().collect::<Vec<_>>(), ["tz", "pattern"]);
        // The order is how options are written, not what they mean.
        assert_eq!(
            opts,
            JobOptions::new()
                .delay(Duration::ZERO)
                .job_id("a")
                .priority(2)
                .repeat(RepeatOptions::cron("* * * * *").tz("UTC"))
        );
    }

    #[test]
    fn defaults_come_first_as_in_a_javascript_spread_and_attempts_first_in_a_job() {
        let defaults = JobOptions::new().lifo(true).attempts(3);
        let merged = JobOptions::new().priority(2).lifo(false).or(&defaults);
        assert_eq!(keys(&merged), ["lifo", "attempts", "priority"]);
        assert_eq!(merged.lifo, Some(false));
        let job = JobOptions::new().delay(Duration::ZERO).with_node_defaults();
        assert_eq!(keys(&job), ["attempts", "delay"]);
        // Options set after it still come after `attempts`.
        let later = JobOptions::new().with_node_defaults().delay(Duration::ZERO);
        assert_eq!(keys(&later), ["attempts", "delay"]);
    }
}
