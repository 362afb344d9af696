//! One question to one node, on a connection of its own and bounded in time: the topology,
//! role and sentinel lookups that decide where calls go.

use std::time::Duration;

use redis::RedisResult;
use redis::aio::MultiplexedConnection;

use super::direct::timed_out;

/// Opens a connection to the node `client` reaches and runs `question` on it. Opening and
/// each reply are bounded by `timeout`, the whole by twice that: a node that stopped
/// answering (a partition, a dead NAT entry) cannot hold up the route. `what` names the
/// question in the timeout's error.
pub(crate) async fn ask<T, F>(
    client: &redis::Client,
    timeout: Duration,
    what: &'static str,
    question: impl FnOnce(MultiplexedConnection) -> F,
) -> RedisResult<T>
where
    F: Future<Output = RedisResult<T>>,
{
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeout))
        .set_response_timeout(Some(timeout));
    let asking = async {
        let con = client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        question(con).await
    };
    tokio::time::timeout(timeout * 2, asking)
        .await
        .map_err(|_| timed_out(what))?
}
