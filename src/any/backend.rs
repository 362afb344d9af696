//! [`AnyBackend`]: every `Backend` section, delegated to the store chosen at run time.

use std::time::Duration;

use bullmq_core::backend::{
    AddJobSchedulerArgs, AddJobs, Admin, Batch, BlockTimeouts, Blocking, ClientInfo, ClientRole,
    CompleteArgs, DelayArgs, Dependencies, DependenciesQuery, DependencyKind, EventId, Events,
    FailArgs, FetchParams, FieldUpdates, FinishStatus, Finished, FlowNode, JobLogs, JobMutations,
    JobSchedulerRecord, Lifecycle, LockToken, Locks, Marker, Metrics, NewJob, NextIterationArgs,
    NextJob, NodeKey, ObliterateArgs, ObliterateRefusal, Page, ParentKeyOpts, Queries, QueueMeta,
    Range, RelayStore, ReprocessOptions, ScalingSignals, Schedulers, StalledCheck, StreamEvent,
    Transitions,
};
use bullmq_core::clock::Clock;
use bullmq_core::job::{FinishedState, JobType};
use bullmq_core::relay::{
    RelayCounts, RelayId, RelayInboxBatch, RelayNodeConnection, RelayNodeInfo, RelayNodeState,
    RelayPatternState, RelayPublishArgs, RelayPublished, RelayRetainedState, RelaySubscribed,
    RelaySubscriptionFilter, RelaySubscriptionState,
};
use bullmq_core::{Job, JobId, JobState, Prefix, QueueName, Result, ScriptError};

/// The backend of a store chosen at run time (see [`connect`](super::connect)): Redis or
/// PostgreSQL, each variant there when its feature (`redis`, `postgres`) is compiled in.
///
/// It implements every section of [`Backend`](bullmq_core::backend::Backend) by handing each
/// call to the backend it holds, so `Queue<AnyBackend>`, `Worker<AnyBackend, _>` and the rest
/// work on either store from one binary.
#[derive(Debug, Clone)]
#[non_exhaustive]
// A backend is built once per queue and rarely moved: boxing the larger variant would only
// add an indirection to every call.
#[allow(clippy::large_enum_variant)]
pub enum AnyBackend {
    /// Redis (feature `redis`).
    #[cfg(feature = "redis")]
    Redis(bullmq_redis::RedisBackend),
    /// PostgreSQL (feature `postgres`).
    #[cfg(feature = "postgres")]
    Postgres(bullmq_postgres::PostgresBackend),
}

#[cfg(feature = "redis")]
impl From<bullmq_redis::RedisBackend> for AnyBackend {
    fn from(backend: bullmq_redis::RedisBackend) -> Self {
        Self::Redis(backend)
    }
}

#[cfg(feature = "postgres")]
impl From<bullmq_postgres::PostgresBackend> for AnyBackend {
    fn from(backend: bullmq_postgres::PostgresBackend) -> Self {
        Self::Postgres(backend)
    }
}

/// `$body` with `$b` bound to the backend inside `$self`, whichever it is.
macro_rules! dispatch {
    ($self:expr, $b:ident => $body:expr) => {
        match $self {
            #[cfg(feature = "redis")]
            AnyBackend::Redis($b) => $body,
            #[cfg(feature = "postgres")]
            AnyBackend::Postgres($b) => $body,
        }
    };
}

impl AnyBackend {
    /// Reads time from `clock` instead of the system clock: the chosen backend's
    /// `with_clock`, the one clock of everything built on it.
    #[must_use]
    pub fn with_clock(self, clock: impl Clock) -> Self {
        dispatch!(self, b => b.with_clock(clock).into())
    }

    /// Every queue of the store this backend is on, sorted by name: on Redis the queues
    /// under its prefix ([`RedisBackend::queue_names`](bullmq_redis::RedisBackend::queue_names)),
    /// on PostgreSQL the queues of its schema
    /// ([`PostgresBackend::queue_names`](bullmq_postgres::PostgresBackend::queue_names)).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let backend = bullmq::connect("redis://127.0.0.1:6379", "any").await?;
    /// let queues = backend.queue_names().await?;
    /// # let _ = queues; Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The store's refusal or a lost connection.
    pub async fn queue_names(&self) -> Result<Vec<QueueName>> {
        dispatch!(self, b => b.queue_names().await)
    }
}

/// Implements section `$section` by handing each listed async method to the chosen backend;
/// the items after the list (methods that are not async or answer no `Result`) are copied in
/// as written.
macro_rules! delegate {
    ($section:ident {
        $(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*
    } $($item:item)*) => {
        impl $section for AnyBackend {
            $(
                async fn $name(&self $(, $arg: $ty)*) -> $ret {
                    dispatch!(self, b => b.$name($($arg),*).await)
                }
            )*
            $($item)*
        }
    };
}

impl Lifecycle for AnyBackend {
    async fn wait_until_ready(&self) -> Result<()> {
        dispatch!(self, b => b.wait_until_ready().await)
    }

    async fn close(&self, force: bool) -> Result<()> {
        dispatch!(self, b => b.close(force).await)
    }

    async fn disconnect(&self) -> Result<()> {
        dispatch!(self, b => b.disconnect().await)
    }

    async fn set_client_role(&self, role: ClientRole) -> Result<()> {
        dispatch!(self, b => b.set_client_role(role).await)
    }

    fn is_closing(&self) -> bool {
        dispatch!(self, b => b.is_closing())
    }

    fn handle(&self) -> Self {
        dispatch!(self, b => b.handle().into())
    }

    fn for_queue(&self, queue: &QueueName, prefix: Option<&Prefix>) -> Self {
        dispatch!(self, b => b.for_queue(queue, prefix).into())
    }

    fn qualified_name(&self) -> &str {
        dispatch!(self, b => b.qualified_name())
    }

    fn bound_queue(&self) -> Option<&QueueName> {
        dispatch!(self, b => b.bound_queue())
    }

    fn to_key(&self, part: &str) -> String {
        dispatch!(self, b => b.to_key(part))
    }

    fn parse_node_key(&self, key: &str) -> Option<NodeKey> {
        dispatch!(self, b => b.parse_node_key(key))
    }

    fn client_name(&self, role: &ClientRole) -> String {
        dispatch!(self, b => b.client_name(role))
    }

    fn block_timeouts(&self) -> BlockTimeouts {
        dispatch!(self, b => b.block_timeouts())
    }

    fn clock(&self) -> &dyn Clock {
        dispatch!(self, b => b.clock())
    }
}

delegate!(AddJobs {
    fn add_job(&self, job: &Job, parent: &ParentKeyOpts) -> Result<JobId>;
    fn add_jobs(&self, jobs: &[NewJob]) -> Result<Vec<JobId>>;
    fn add_flow(&self, nodes: &[FlowNode]) -> Result<Vec<std::result::Result<JobId, ScriptError>>>;
});

delegate!(Transitions {
    fn move_to_active(&self, fetch: &FetchParams) -> Result<NextJob>;
    fn move_to_completed(&self, job: &Job, args: &CompleteArgs) -> Result<Finished>;
    fn move_to_failed(&self, job: &Job, args: &FailArgs) -> Result<Finished>;
    fn move_to_delayed(&self, job_id: &JobId, args: &DelayArgs) -> Result<Option<NextJob>>;
    fn move_to_waiting_children(
        &self,
        job_id: &JobId,
        token: &LockToken,
        child_key: Option<&str>
    ) -> Result<bool>;
    fn move_job_from_active_to_wait(
        &self,
        job_id: &JobId,
        token: Option<&LockToken>
    ) -> Result<Duration>;
    fn retry_job(
        &self,
        job_id: &JobId,
        lifo: bool,
        token: Option<&LockToken>,
        fields: &FieldUpdates
    ) -> Result<()>;
    fn reprocess_job(&self, job: &Job, state: FinishedState, opts: ReprocessOptions) -> Result<()>;
    fn promote(&self, job_id: &JobId) -> Result<()>;
    fn move_stalled_jobs_to_wait(&self, check: &StalledCheck) -> Result<Vec<JobId>>;
});

delegate!(Admin {
    fn pause(&self, pause: bool) -> Result<()>;
    fn drain(&self, delayed: bool) -> Result<()>;
    fn clean_jobs_by_state(&self, state: JobState, before_ms: u64, limit: u32) -> Result<Vec<JobId>>;
    fn obliterate(&self, args: ObliterateArgs) -> Result<std::result::Result<Batch, ObliterateRefusal>>;
    fn retry_finished_jobs(&self, state: FinishedState, count: u32, before_ms: u64) -> Result<Batch>;
    fn promote_jobs(&self, count: u32) -> Result<Batch>;
    fn remove_orphaned_jobs(&self, count: u32, limit: u32) -> Result<u64>;
    fn set_rate_limit(&self, expire: Duration) -> Result<()>;
    fn remove_rate_limit_key(&self) -> Result<bool>;
    fn remove_deprecated_priority_key(&self) -> Result<u64>;
});

delegate!(Locks {
    fn extend_lock(&self, job_id: &JobId, token: &LockToken, duration: Duration) -> Result<bool>;
    fn extend_locks(&self, locks: &[(JobId, LockToken)], duration: Duration) -> Result<Vec<JobId>>;
});

delegate!(JobMutations {
    fn update_data(&self, job_id: &JobId, data: &str) -> Result<()>;
    fn update_progress(&self, job_id: &JobId, progress: &serde_json::Value) -> Result<()>;
    fn add_log(&self, job_id: &JobId, row: &str, keep_logs: Option<u32>) -> Result<u64>;
    fn clear_logs(&self, job_id: &JobId, keep_logs: Option<u32>) -> Result<()>;
    fn change_delay(&self, job_id: &JobId, delay: Duration) -> Result<()>;
    fn change_priority(&self, job_id: &JobId, priority: u32, lifo: bool) -> Result<()>;
    fn remove(&self, job_id: &JobId, remove_children: bool) -> Result<bool>;
    fn remove_unprocessed_children(&self, job_id: &JobId) -> Result<()>;
    fn remove_child_dependency(&self, job_id: &JobId, parent_key: &str) -> Result<bool>;
    fn remove_deduplication_key(&self, deduplication_id: &str, job_id: &JobId) -> Result<bool>;
    fn delete_deduplication_key(&self, deduplication_id: &str) -> Result<bool>;
});

delegate!(Schedulers {
    fn add_job_scheduler(&self, args: &AddJobSchedulerArgs) -> Result<(JobId, Duration)>;
    fn update_job_scheduler_next_millis(&self, args: &NextIterationArgs) -> Result<Option<JobId>>;
    fn remove_job_scheduler(&self, scheduler_id: &str) -> Result<bool>;
    fn get_job_scheduler(&self, scheduler_id: &str) -> Result<Option<JobSchedulerRecord>>;
    fn is_job_scheduler(&self, id: &str) -> Result<bool>;
    fn get_job_schedulers_range(&self, start: i64, end: i64, asc: bool) -> Result<Vec<(String, u64)>>;
    fn get_job_schedulers_count(&self) -> Result<u64>;
});

delegate!(Queries {
    fn get_state(&self, job_id: &JobId) -> Result<Option<JobState>>;
    fn is_finished(&self, job_id: &JobId) -> Result<FinishStatus>;
    fn is_maxed(&self) -> Result<bool>;
    fn is_job_in_state(&self, state: JobState, job_id: &JobId) -> Result<bool>;
    fn get_job(&self, job_id: &JobId) -> Result<Option<Job>>;
    fn get_deduplication_job_id(&self, deduplication_id: &str) -> Result<Option<JobId>>;
    fn get_job_logs(&self, job_id: &JobId, range: Range) -> Result<JobLogs>;
    fn get_rate_limit_ttl(&self, max_jobs: Option<u64>) -> Result<Duration>;
    fn get_counts(&self, types: &[JobType], delayed_before: Option<u64>) -> Result<Vec<u64>>;
    fn get_counts_per_priority(&self, priorities: &[u32]) -> Result<Vec<u64>>;
    fn get_ranges(&self, types: &[JobType], range: Range) -> Result<Vec<JobId>>;
    fn get_dependency_counts(&self, job_id: &JobId, kinds: &[DependencyKind]) -> Result<Vec<u64>>;
    fn get_dependencies(&self, job_id: &JobId, query: &DependenciesQuery) -> Result<Dependencies>;
    fn get_processed_children_values(&self, job_id: &JobId) -> Result<Vec<(String, String)>>;
    fn get_ignored_children_failures(&self, job_id: &JobId) -> Result<Vec<(String, String)>>;
    fn get_metrics(&self, kind: FinishedState, start: i64, end: i64) -> Result<Metrics>;
    fn get_client_list(&self) -> Result<Vec<ClientInfo>>;
    fn paginate(
        &self,
        job_id: &JobId,
        kind: DependencyKind,
        start: u64,
        end: u64,
        fetch_jobs: bool
    ) -> Result<Page>;
    fn scaling_signals(&self) -> Result<ScalingSignals>;
});

delegate!(QueueMeta {
    fn set_queue_meta(&self, values: &[(&str, String)]) -> Result<u64>;
    fn get_queue_meta_field(&self, field: &str) -> Result<Option<String>>;
    fn get_queue_meta_fields(&self, fields: &[&str]) -> Result<Vec<Option<String>>>;
    fn get_queue_meta(&self) -> Result<Vec<(String, String)>>;
    fn remove_queue_meta_fields(&self, fields: &[&str]) -> Result<u64>;
    fn has_queue_meta_field(&self, field: &str) -> Result<bool>;
});

delegate!(Events {
    fn trim_events(&self, max_length: u64) -> Result<u64>;
    fn publish_event(&self, fields: &[(&str, String)], max_events: u64) -> Result<EventId>;
    fn read_events(&self, after: &EventId, block: Duration) -> Result<Vec<StreamEvent>>;
    fn last_event_id(&self) -> Result<EventId>;
});

delegate!(Blocking {
    fn wait_for_job(&self, timeout: Duration) -> Result<Option<Marker>>;
    fn disconnect_blocking(&self, wait: bool) -> Result<()>;
    fn reconnect_blocking(&self) -> Result<()>;
});

delegate!(RelayStore {
    fn relay_register_node(
        &self,
        node: &RelayId,
        lease: Duration,
        info: &RelayNodeInfo,
        inbox_max_length: u64
    ) -> Result<()>;
    fn relay_heartbeat(&self, node: &RelayId, lease: Duration) -> Result<bool>;
    fn relay_unregister_node(&self, node: &RelayId) -> Result<bool>;
    fn relay_sweep(&self, limit: u32) -> Result<Vec<String>>;
    fn relay_subscribe(&self, node: &RelayId, endpoint: &RelayId, pattern: &str) -> Result<RelaySubscribed>;
    fn relay_remove_endpoint(&self, node: &RelayId, endpoint: &RelayId) -> Result<u64>;
    fn relay_publish(&self, topic: &str, data: &str, args: RelayPublishArgs) -> Result<RelayPublished>;
    fn relay_delete_retained(&self, topic: &str) -> Result<bool>;
    fn relay_read_inbox(
        &self,
        node: &RelayId,
        cursor: &str,
        block: Duration,
        count: u32
    ) -> Result<RelayInboxBatch>;
    fn relay_trim_inbox(&self, node: &RelayId, cursor: &str, max_length: u64) -> Result<u64>;
    fn relay_counts(&self) -> Result<RelayCounts>;
    fn relay_nodes(&self, start: i64, end: i64) -> Result<Vec<RelayNodeState>>;
    fn relay_subscriptions(
        &self,
        filter: Option<&RelaySubscriptionFilter>,
        start: i64,
        end: i64
    ) -> Result<Vec<RelaySubscriptionState>>;
    fn relay_patterns(&self, start: i64, end: i64) -> Result<Vec<RelayPatternState>>;
    fn relay_retained(&self, start: i64, end: i64) -> Result<Vec<RelayRetainedState>>;
    fn relay_namespaces(&self) -> Result<Vec<String>>;
    fn relay_node_connections(&self, node: &RelayId) -> Result<Vec<RelayNodeConnection>>;
    fn relay_close(&self) -> Result<()>;
}
    fn relay_handle(&self, namespace: &RelayId, node: Option<&RelayId>) -> Self {
        dispatch!(self, b => b.relay_handle(namespace, node).into())
    }

    fn relay_initial_cursor(&self) -> &'static str {
        dispatch!(self, b => b.relay_initial_cursor())
    }

    async fn relay_interrupt_inbox(&self) {
        dispatch!(self, b => b.relay_interrupt_inbox().await);
    }
);
