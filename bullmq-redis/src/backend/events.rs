//! `Events` for Redis: the `<prefix>:<queue>:events` stream.
//!
//! `XREAD BLOCK` runs on the dedicated events connection, never on the worker's blocking one
//! (see the `lifecycle` module), so a `QueueEvents` and a worker built on clones of one backend
//! do not wait behind each other.

use std::time::Duration;

use bullmq_core::Result;
use bullmq_core::backend::{EventId, Events, StreamEvent};
use redis::Value;

use super::RedisBackend;
use crate::connection::Dedicated;
use crate::error::{unexpected, wrap};
use crate::reply;

/// How long past its `BLOCK` an `XREAD` may take before the connection is presumed lost.
const WATCHDOG_MARGIN: Duration = Duration::from_secs(1);

/// `BLOCK` in whole milliseconds, at least 1: `BLOCK 0` would mean "forever".
fn block_millis(block: Duration) -> u64 {
    let ms = crate::wire::ms(block);
    let rounded_up = ms + u64::from(block > Duration::from_millis(ms));
    rounded_up.max(1)
}

impl Events for RedisBackend {
    /// `XTRIM <events> MAXLEN ~ <max_length>`: Redis trims whole nodes only, so a few more
    /// entries than asked may stay.
    async fn trim_events(&self, max_length: u64) -> Result<u64> {
        let removed: Value = redis::cmd("XTRIM")
            .arg(&self.keys().events)
            .arg("MAXLEN")
            .arg("~")
            .arg(max_length)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("trim events"))?;
        Ok(reply::count(&removed))
    }

    /// `XADD <events> MAXLEN ~ <max_events> * <field> <value> …`, fields in the order given.
    async fn publish_event(&self, fields: &[(&str, String)], max_events: u64) -> Result<EventId> {
        let mut cmd = redis::cmd("XADD");
        cmd.arg(&self.keys().events)
            .arg("MAXLEN")
            .arg("~")
            .arg(max_events)
            .arg("*");
        for (field, value) in fields {
            cmd.arg(*field).arg(value);
        }
        let id = self.query(&cmd, "publish an event").await?;
        reply::text(&id)
            .map(EventId::new)
            .ok_or_else(|| unexpected("publish an event", &id))
    }

    /// `XREAD BLOCK <ms> STREAMS <events> <after>`; `$` reads only entries added from now on.
    /// A zero `block` reads without blocking (Redis' `BLOCK 0` would wait forever). An empty
    /// answer means the time ran out, or the backend was disconnected or closed meanwhile.
    async fn read_events(&self, after: &EventId, block: Duration) -> Result<Vec<StreamEvent>> {
        let mut cmd = redis::cmd("XREAD");
        if !block.is_zero() {
            cmd.arg("BLOCK").arg(block_millis(block));
        }
        cmd.arg("STREAMS")
            .arg(&self.keys().events)
            .arg(after.as_str());
        let read = self
            .blocking_call(
                Dedicated::Events,
                &cmd,
                block + WATCHDOG_MARGIN,
                "read events",
            )
            .await?;
        read.map_or_else(|| Ok(Vec::new()), |v| reply::stream_events(&v))
    }

    /// `XREVRANGE <events> + - COUNT 1`: the newest entry's id, or `0-0` (below every id
    /// Redis gives) when the stream is empty or missing.
    async fn last_event_id(&self) -> Result<EventId> {
        let newest: Value = redis::cmd("XREVRANGE")
            .arg(&self.keys().events)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("read the last event id"))?;
        match reply::items(&newest).first() {
            None => Ok(EventId::new("0-0")),
            Some(entry) => reply::items(entry)
                .first()
                .and_then(reply::text)
                .map(EventId::new)
                .ok_or_else(|| unexpected("read the last event id", &newest)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::block_millis;

    #[test]
    fn block_is_whole_milliseconds_rounded_up() {
        assert_eq!(block_millis(Duration::from_micros(1)), 1);
        assert_eq!(block_millis(Duration::from_micros(1500)), 2);
        assert_eq!(block_millis(Duration::from_secs(10)), 10_000);
    }
}
