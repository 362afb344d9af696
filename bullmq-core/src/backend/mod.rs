//! The contract every datastore backend implements.
//!
//! [`Backend`] mirrors Node.js BullMQ 6's `IQueueBackend` (`src/interfaces/queue-backend.ts`
//! upstream) one to one: one method per atomic operation, each a Lua script on Redis and an
//! SQL command on PostgreSQL, named after the upstream operation in snake case. It is split
//! into section traits, one file each, with the same file names in every backend crate:
//!
//! | section | upstream operations |
//! |---|---|
//! | [`Lifecycle`] | `waitUntilReady`, `close`, `disconnect`, `setName`, `forQueue`, `qualifiedName`, `toKey`, `parseNodeKey`, `clientName`, block timeouts; and the clock (ours: one source of time per backend) |
//! | [`AddJobs`] | `addJob`, `addJobs`, `addFlow` |
//! | [`Transitions`] | `moveToActive`, `moveToCompleted`, `moveToFailed`, `moveToDelayed`, `moveToWaitingChildren`, `moveJobFromActiveToWait`, `retryJob`, `retryFinishedJob`, `promote`, `moveStalledJobsToWait` |
//! | [`Admin`] | `pause`, `drain`, `cleanJobsByState`, `obliterate`, `retryFinishedJobs`, `promoteJobs`, `removeOrphanedJobs`, `setRateLimit`, `removeRateLimitKey`, `removeDeprecatedPriorityKey` |
//! | [`Locks`] | `extendLock`, `extendLocks` |
//! | [`JobMutations`] | `updateData`, `updateProgress`, `addLog`, `clearLogs`, `changeDelay`, `changePriority`, `remove`, `removeUnprocessedChildren`, `removeChildDependency`, `removeDeduplicationKey`, `deleteDeduplicationKey` |
//! | [`Schedulers`] | `addJobScheduler`, `updateJobSchedulerNextMillis`, `removeJobScheduler`, `getJobScheduler`(+`Data`), `isJobScheduler`, `getJobSchedulersRange`, `getJobSchedulersCount` |
//! | [`Queries`] | `getState`, `isFinished`, `isMaxed`, `isJobInState`, `getJobData`, `getDeduplicationJobId`, `getJobLogs`, `getRateLimitTtl`, `getCounts`, `getCountsPerPriority`, `getRanges`, `getDependencyCounts`, `getDependencies`, `getProcessedChildrenValues`, `getIgnoredChildrenFailures`, `getMetrics`, `getClientList`, `paginate` |
//! | [`QueueMeta`] | `setQueueMeta`, `getQueueMetaField(s)`, `getQueueMeta`, `removeQueueMetaFields`, `hasQueueMetaField` |
//! | [`Events`] | `trimEvents`, `publishEvent`, `readEvents` |
//! | [`Blocking`] | `waitForJob`, `disconnectBlocking`, `reconnectBlocking` |
//! | [`RelayStore`] | `IRelayBackend` (experimental upstream): `registerNode`, `heartbeat`, `unregisterNode`, `sweep`, `subscribe`, `removeEndpoint`, `publish`, `deleteRetained`, `readInbox`, `trimInbox`, `interruptInbox` and the getters |
//!
//! Inputs and outputs are domain types; no `redis::Value` or `PgRow` crosses the trait, and no
//! connection or transaction type either: a backend owns its connections. Powers only one store
//! has (enqueueing inside the caller's SQL transaction, preloading Lua scripts) are inherent
//! methods of that backend, not flags here.
//!
//! # Why native `async fn` in traits, not `async-trait`
//!
//! Methods return `impl Future<Output = …> + Send` (return-position `impl Trait` in traits,
//! stable since Rust 1.75). `Queue`, `Worker` and friends are generic over `B: Backend`, and
//! switching stores is a compile-time feature, so static dispatch is all we need: no boxed
//! future and no allocation per call on the hot path (a worker calls `move_to_completed`
//! once per job), and the compiler sees through every call. `async-trait` would box each
//! future to make the trait object-safe, which only pays off for runtime backend selection;
//! that is served without boxing by the facade's `AnyBackend`, an enum of the compiled-in
//! backends that implements every section by delegation (`bullmq::connect` picks it by URL). The explicit `+ Send` bound keeps the futures usable on tokio's
//! multi-threaded runtime.
//!
//! # Stability
//!
//! The trait is the seam between the queue logic and the stores. Users are not expected to
//! implement it, and it may change in minor releases, as upstream's interface does.

mod add;
mod admin;
mod blocking;
mod events;
mod lifecycle;
mod locks;
mod meta;
mod mutations;
mod queries;
mod ranges;
mod relay;
mod scaling;
mod scheduler_hash;
mod schedulers;
mod transitions;
mod types;

pub use add::{AddJobs, FlowNode, NewJob, ParentKeyOpts};
pub use admin::{Admin, Batch, ObliterateArgs, ObliterateRefusal};
pub use blocking::{Blocking, Marker};
pub use events::{Events, StreamEvent};
pub use lifecycle::{BlockTimeouts, ClientRole, Lifecycle, NodeKey};
pub use locks::Locks;
pub use meta::QueueMeta;
pub use mutations::JobMutations;
pub use queries::{
    ClientInfo, Dependencies, DependenciesQuery, FinishStatus, JobLogs, Metrics, Page, Queries,
};
pub use ranges::RangeIds;
pub use relay::RelayStore;
#[doc(hidden)]
pub use relay::node_info_json;
pub use scaling::{SCALING_LOOKAHEAD, ScalingObservation, ScalingSignals};
pub use schedulers::{AddJobSchedulerArgs, JobSchedulerRecord, NextIterationArgs, Schedulers};
pub use transitions::{
    CompleteArgs, DelayArgs, FailArgs, FetchParams, FetchedJob, FieldUpdates, Finished, NextJob,
    ReprocessOptions, StalledCheck, Transitions, WorkerSettings,
};
pub use types::{DependencyKind, EventId, LockToken, Range, RateLimiter};

/// Declares [`Backend`] over its sections and implements it for every type that implements
/// them all, so the list of sections is written once.
macro_rules! backend_of_sections {
    ($(#[$doc:meta])* $($section:ident),+ $(,)?) => {
        $(#[$doc])*
        pub trait Backend: $($section +)+ Clone + 'static {}

        impl<T> Backend for T where T: $($section +)+ Clone + 'static {}
    };
}

backend_of_sections! {
    /// Everything a datastore must do for bullmq: the union of the section traits.
    ///
    /// Implemented automatically for any type that implements every section.
    Lifecycle,
    AddJobs,
    Transitions,
    Admin,
    Locks,
    JobMutations,
    Schedulers,
    Queries,
    QueueMeta,
    Events,
    Blocking,
    RelayStore,
}
