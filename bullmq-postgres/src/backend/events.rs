//! `Events` for PostgreSQL: upstream's `event` table, read by id, woken by `bullmq_events`.
//!
//! # Every committed event, once, in id order
//!
//! Upstream reads `id > cursor`, but ids are taken before commit, so events commit out of id
//! order and its reader skips an event whose transaction commits after a later one's. This
//! reader only hands out events up to a *horizon*, an id below which no event can appear any
//! more (the [`gaps`] module establishes it from the sequence and the writers in flight);
//! events past it wait for the next read. A read that finds only such events waits (within
//! its `block`) for the writers before them to end.
//!
//! The cursor is the id of the last event handed out (a number); `$` stands for the newest
//! event now, established the same way.

mod gaps;

use std::time::Duration;

use bullmq_core::backend::{EventId, Events, StreamEvent};
use bullmq_core::options::ValidationError;
use bullmq_core::{Error, Result};
use serde_json::Value;
use sqlx::Row as _;
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use tokio::time::Instant;

pub(crate) use gaps::Horizon;

use super::watch::{Watch, Woken};
use super::{PostgresBackend, one_value, sql_error};
use crate::connection::listener::Channel;
use crate::sql::commands;
use crate::wire;

/// Events fetched per read (upstream's `EVENT_READ_BATCH`).
const EVENT_READ_BATCH: i64 = 100;

/// Where a read starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cursor {
    /// After the newest event now (`$`).
    Latest,
    /// After this id.
    After(i64),
}

/// `$`, or an id of this backend: a number (`0-0`, Redis' "from the start", reads as 0).
fn parse_cursor(id: &EventId) -> Result<Cursor> {
    match id.as_str() {
        "$" => Ok(Cursor::Latest),
        "0-0" => Ok(Cursor::After(0)),
        text => text.trim().parse().map(Cursor::After).map_err(|_| {
            Error::Invalid(ValidationError::single(
                "read events",
                "after",
                format!("`{text}` is neither `$` nor a PostgreSQL event id (a number)"),
            ))
        }),
    }
}

/// A field value as Node.js' `String(value)` writes it (strings as they are).
fn js_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

/// One `read_events` row: `event` first, then `data`'s fields in stored order.
fn stream_event(row: &PgRow) -> Result<(i64, StreamEvent)> {
    const CONTEXT: &str = "read events";
    let id: i64 = row.try_get("id").map_err(sql_error(CONTEXT))?;
    let event: String = row.try_get("event").map_err(sql_error(CONTEXT))?;
    let data: Option<Value> = row.try_get("data").map_err(sql_error(CONTEXT))?;
    let mut fields = vec![("event".to_owned(), event)];
    if let Some(Value::Object(data)) = data {
        fields.extend(data.iter().map(|(k, v)| (k.clone(), js_string(v))));
    }
    Ok((
        id,
        StreamEvent {
            id: EventId::new(id.to_string()),
            fields,
        },
    ))
}

impl PostgresBackend {
    /// Up to a batch of events after `cursor`, oldest first (`read_events`).
    async fn fetch_events(&self, cursor: i64) -> Result<Vec<(i64, StreamEvent)>> {
        let rows = wire::queued(commands::READ_EVENTS, self.queue_name())
            .bind(cursor)
            .bind(EVENT_READ_BATCH)
            .fetch_all(self.pool())
            .await
            .map_err(sql_error("read events"))?;
        rows.iter().map(stream_event).collect()
    }

    /// The newest event id visible now (`read_events_max`).
    async fn max_event_id(&self) -> Result<i64> {
        const CONTEXT: &str = "read the newest event id";
        let rows = wire::queued(commands::READ_EVENTS_MAX, self.queue_name())
            .fetch_all(self.pool())
            .await
            .map_err(sql_error(CONTEXT))?;
        one_value(rows, "max", CONTEXT)
    }

    /// A cursor after which every event committed from now on is read: the newest event's id,
    /// but never past an id some transaction may still commit. Upstream's plain
    /// `read_events_max` would skip the events of transactions in flight.
    async fn newest_event_id(&self) -> Result<i64> {
        let hold = self.state.event_hold_max();
        // Writers held longer than `hold` are given up on, so this deadline is not reached
        // but by a slow server; then the cursor is upstream's.
        let deadline = Instant::now() + hold + Duration::from_secs(1);
        let high = self
            .state
            .events
            .advance(self.pool(), deadline, hold)
            .await?;
        let newest = self.max_event_id().await?;
        // Up to `high` every event is final, so the newest one up to it is the exact answer;
        // events past `high` committed just now, and are read again rather than risk a
        // skipped one before them.
        Ok(high.map_or(newest, |high| newest.min(high)))
    }
}

impl Events for PostgresBackend {
    /// Not on PostgreSQL, as upstream: `publish_event` trims by `opts.maxLenEvents`.
    async fn trim_events(&self, _max_length: u64) -> Result<u64> {
        Err(Error::Unsupported {
            operation: "trimEvents",
            backend: "postgres",
        })
    }

    /// `publish_event`: the `event` field is the event's name, the others its data (strings,
    /// in the order given). `max_events` is not used, as upstream: the function trims to the
    /// queue's `opts.maxLenEvents`.
    async fn publish_event(&self, fields: &[(&str, String)], _max_events: u64) -> Result<EventId> {
        const CONTEXT: &str = "publish an event";
        let mut event: Option<&str> = None;
        let mut data = serde_json::Map::new();
        for (name, value) in fields {
            if *name == "event" {
                event = Some(value);
            } else {
                data.insert((*name).to_owned(), Value::String(value.clone()));
            }
        }
        let rows = wire::queued(commands::PUBLISH_EVENT, self.queue_name())
            // Node.js' `String(fields.event)` when there is none.
            .bind(event.unwrap_or("undefined"))
            .bind(Json(&data))
            .fetch_all(self.pool())
            .await
            .map_err(sql_error(CONTEXT))?;
        let id: i64 = one_value(rows, "id", CONTEXT)?;
        Ok(EventId::new(id.to_string()))
    }

    /// Events after `after` in id order, up to the horizon (see the module); waits up to
    /// `block` for some. Empty when the time ran out, or on `close` / `disconnect`.
    async fn read_events(&self, after: &EventId, block: Duration) -> Result<Vec<StreamEvent>> {
        let cursor = parse_cursor(after)?;
        // Subscribe first: an interrupt or notification from here on is seen.
        let mut watch = Watch::start(self, Channel::Events, true);
        if self.state.is_closing() || watch.interrupted() {
            return Ok(Vec::new());
        }
        let deadline = Instant::now()
            .checked_add(block)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
        let cursor = match cursor {
            Cursor::After(id) => id,
            Cursor::Latest => self.newest_event_id().await?,
        };
        loop {
            if self.state.is_closing() {
                return Ok(Vec::new());
            }
            // The horizon before the rows: every event up to it is visible to the fetch that
            // follows. Read after, it could include one another read's `advance` saw commit
            // after this fetch, whose later neighbours this fetch has: it would be skipped.
            let safe = self.state.events.safe();
            let mut events = self.fetch_events(cursor).await?;
            let ready = events.iter().take_while(|(id, _)| *id <= safe).count();
            if ready > 0 {
                events.truncate(ready);
                return Ok(events.into_iter().map(|(_, event)| event).collect());
            }
            if !events.is_empty() {
                // Newer events are there, but one before them may still be uncommitted.
                let advanced = tokio::select! {
                    biased;
                    () = watch.until_interrupted() => return Ok(Vec::new()),
                    advanced = self.state.events.advance(
                        self.pool(),
                        deadline,
                        self.state.event_hold_max(),
                    ) => advanced?,
                };
                if advanced.is_none() {
                    return Ok(Vec::new());
                }
                continue;
            }
            if Instant::now() >= deadline {
                return Ok(Vec::new());
            }
            match watch.wait(deadline).await {
                Woken::Heard | Woken::Look => {}
                Woken::Deadline | Woken::Interrupted => return Ok(Vec::new()),
            }
        }
    }

    /// The newest event's id, never past an id that may still commit (see
    /// `newest_event_id`); `0` when there is none.
    async fn last_event_id(&self) -> Result<EventId> {
        Ok(EventId::new(self.newest_event_id().await?.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use bullmq_core::backend::EventId;
    use serde_json::json;

    use super::{Cursor, js_string, parse_cursor};

    #[test]
    fn cursors_are_numbers_or_latest() {
        assert_eq!(parse_cursor(&EventId::latest()).ok(), Some(Cursor::Latest));
        assert_eq!(
            parse_cursor(&EventId::new("42")).ok(),
            Some(Cursor::After(42))
        );
        assert_eq!(
            parse_cursor(&EventId::new("0-0")).ok(),
            Some(Cursor::After(0))
        );
        assert!(parse_cursor(&EventId::new("1700000000000-0")).is_err());
    }

    #[test]
    fn values_read_as_node_writes_them() {
        assert_eq!(js_string(&json!("x")), "x");
        assert_eq!(js_string(&json!(7)), "7");
        assert_eq!(js_string(&json!(true)), "true");
        assert_eq!(js_string(&json!(null)), "null");
        assert_eq!(js_string(&json!([1, null, "a"])), "1,,a");
        assert_eq!(js_string(&json!({"a": 1})), "[object Object]");
    }
}
