//! Live counts as server-sent events. This release polls the store once a second per open
//! stream (one counts call per queue); reading the queues' event streams instead is left for
//! a later one.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream};
use serde_json::{Map, Value, json};

use crate::error::DashboardError;
use crate::pages::overview::{counts, visible};
use crate::pages::{STATES, open};
use crate::request::Ctx;
use crate::state::Shared;

/// How often a stream polls.
const TICK: Duration = Duration::from_secs(1);
/// Ticks between two discoveries of the overview's queues.
const REDISCOVER: u32 = 10;

fn counts_json(values: &[u64]) -> Value {
    let mut map = Map::new();
    for (s, n) in STATES.iter().zip(values) {
        map.insert(s.as_str().to_owned(), json!(n));
    }
    Value::Object(map)
}

/// `GET /c/{connection}/q/{queue}/live`: the queue's counts, every second (event `counts`).
pub(crate) async fn queue_live(
    State(inner): State<Shared>,
    Path((connection, queue)): Path<(String, String)>,
    ctx: Ctx,
) -> Result<Response, DashboardError> {
    let opened = open(&inner, &ctx, &connection, &queue).await?;
    let (conn, name, queue) = (
        opened.conn.name.clone(),
        opened.name.as_str().to_owned(),
        opened.queue,
    );
    let events = stream::unfold((queue, true), move |(queue, first)| {
        let (conn, name) = (conn.clone(), name.clone());
        async move {
            if !first {
                tokio::time::sleep(TICK).await;
            }
            let event = match counts(&queue).await {
                Ok(values) => Event::default().event("counts").data(
                    json!({"connection": conn, "queue": name, "counts": counts_json(&values)})
                        .to_string(),
                ),
                Err(e) => Event::default().event("error").data(e.to_string()),
            };
            Some((Ok::<_, Infallible>(event), (queue, false)))
        }
    });
    Ok(sse(events))
}

/// `GET /live`: every visible queue's counts, every second (one `counts` event per queue).
pub(crate) async fn overview_live(State(inner): State<Shared>, ctx: Ctx) -> Response {
    let events = stream::unfold((0_u32, Vec::new()), move |(tick, mut queues)| {
        let inner = inner.clone();
        let ctx_parts = ctx.parts.clone();
        async move {
            if tick > 0 {
                tokio::time::sleep(TICK).await;
            }
            if tick % REDISCOVER == 0 {
                let probe = Ctx::for_parts(ctx_parts);
                queues.clear();
                for (i, conn) in inner.connections.iter().enumerate() {
                    if let Ok(names) = visible(&inner, &probe, conn).await {
                        queues.extend(names.into_iter().map(|n| (i, n)));
                    }
                }
            }
            let mut batch = Vec::with_capacity(queues.len());
            for (i, name) in &queues {
                let Some(conn) = inner.connections.get(*i) else {
                    continue;
                };
                let Ok(queue) = conn.queue(name).await else {
                    continue;
                };
                if let Ok(values) = counts(&queue).await {
                    batch.push(Ok::<_, Infallible>(Event::default().event("counts").data(
                        json!({"connection": conn.name, "queue": name.as_str(), "counts": counts_json(&values)}).to_string(),
                    )));
                }
            }
            Some((stream::iter(batch), (tick.wrapping_add(1), queues)))
        }
    });
    sse(futures_util::StreamExt::flatten(events))
}

fn sse<S>(events: S) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
