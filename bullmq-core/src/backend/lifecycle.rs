//! Connections, identity and keys of a backend bound to one queue.

use std::future::Future;
use std::time::Duration;

use crate::clock::Clock;
use crate::{Prefix, QueueName, Result};

/// What a connection is used for, which decides its client name (`CLIENT SETNAME` on Redis,
/// `application_name` on PostgreSQL) so that `getWorkers()` in any runtime finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientRole {
    /// A queue or producer: `<prefix>:<base64(queue)>`.
    Queue,
    /// A worker: `…:w:<name>` when named.
    Worker {
        /// The worker's name, if any.
        name: Option<String>,
    },
    /// A `QueueEvents` reader: `…:qe`.
    QueueEvents,
}

/// A flow node key (`<prefix>:<queue>:<id>`) taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeKey {
    /// The key prefix (empty on backends without one).
    pub prefix: String,
    /// The queue name.
    pub queue: String,
    /// The job id.
    pub id: String,
}

/// The bounds of [`Blocking::wait_for_job`](super::Blocking::wait_for_job)'s timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockTimeouts {
    /// The shortest meaningful wait.
    pub minimum: Duration,
    /// The longest useful wait while delayed jobs are pending.
    pub maximum: Duration,
}

impl BlockTimeouts {
    /// Node.js' bounds, which both stores of this workspace start from: 1 ms
    /// (`minimumBlockTimeout`) to 10 s (`maximumBlockTimeout`, past which a blocked call risks
    /// being lost across a reconnect).
    pub const UPSTREAM: Self = Self {
        minimum: Duration::from_millis(1),
        maximum: Duration::from_secs(10),
    };
}

/// Lifecycle and identity (upstream: `waitUntilReady`, `close`, `disconnect`, `forQueue`,
/// `qualifiedName`, `toKey`, `parseNodeKey`, `clientName`, `minimumBlockTimeout`, …), and
/// the backend's clock.
pub trait Lifecycle: Send + Sync + Sized {
    /// Resolves once the connections accept commands.
    fn wait_until_ready(&self) -> impl Future<Output = Result<()>> + Send;

    /// Closes the connections; with `force`, without waiting for blocking calls.
    fn close(&self, force: bool) -> impl Future<Output = Result<()>> + Send;

    /// Drops the connections at once.
    fn disconnect(&self) -> impl Future<Output = Result<()>> + Send;

    /// Names the connections after their role, for discovery by `getWorkers()`.
    fn set_client_role(&self, role: ClientRole) -> impl Future<Output = Result<()>> + Send;

    /// True once [`close`](Self::close) has begun.
    fn is_closing(&self) -> bool;

    /// A new handle on the same store: it shares this backend's pooled connections (the
    /// multiplexed Redis connection, the PostgreSQL pool) and clock, and has its own dedicated
    /// connections (the blocking wait, the event reader, `LISTEN`), closing flag and client
    /// role. `Worker`, `QueueEvents` and `FlowProducer` take one for themselves when built, so
    /// that values built on one backend (or on clones of it) are each listed by `getWorkers`
    /// under their own name, and closing one never closes what another still uses; the
    /// pooled connections close when the last handle is dropped.
    ///
    /// A plain `clone` shares everything, dedicated connections and closing flag included.
    #[must_use]
    fn handle(&self) -> Self;

    /// A sibling bound to another queue (and prefix) that shares this backend's connections;
    /// flows use it to write to several queues in one transaction.
    fn for_queue(&self, queue: &QueueName, prefix: Option<&Prefix>) -> Self;

    /// The queue's qualified name: `<prefix>:<queue>` on Redis.
    fn qualified_name(&self) -> &str;

    /// The name of the queue this backend is bound to, when it knows it (both stores of this
    /// workspace do); [`Queue::from_backend`](crate::Queue::from_backend) takes it from here.
    /// `None` by default, so that a backend written before this method still builds.
    fn bound_queue(&self) -> Option<&QueueName> {
        None
    }

    /// The key (or identifier) of one of the queue's parts: `wait`, `<jobId>:logs`, …
    fn to_key(&self, part: &str) -> String;

    /// Takes a flow node key apart; `None` when it is not one.
    fn parse_node_key(&self, key: &str) -> Option<NodeKey>;

    /// The client name for `role`.
    fn client_name(&self, role: &ClientRole) -> String;

    /// The bounds of a blocking wait on this store.
    fn block_timeouts(&self) -> BlockTimeouts;

    /// The one source of time of everything bound to this backend: the timestamps it sends
    /// the store, and those the `Queue`, `Worker`, `FlowProducer`, `JobScheduler` and
    /// `QueueEvents` built on it read. Set when the backend is built (each backend's
    /// `with_clock`), the system clock otherwise; siblings from
    /// [`for_queue`](Self::for_queue) share it.
    fn clock(&self) -> &dyn Clock;
}
