//! Live updates as server-sent events, read from the queues' event streams.
//!
//! A queue's page gets its counts when the stream says something happened (and every few
//! seconds regardless, for changes no event announces), and each event's name and job id;
//! the overview gets each queue's counts, recounted when its stream moved, with the jobs
//! added, finished and failed over the last minute. A store whose stream cannot be read is
//! polled instead, once a second.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bullmq::backend::{EventId, Events as _, Lifecycle as _, StreamEvent};
use bullmq::{AnyBackend, Queue, QueueName};
use futures_util::stream::{self, Stream, StreamExt as _};
use serde_json::{Map, Value, json};

use crate::error::DashboardError;
use crate::pages::STATES;
use crate::pages::overview::{counts, visible};
use crate::queue_route::QueueRoute;
use crate::request::Ctx;
use crate::state::Shared;

/// How long a queue's stream waits for events, and how often the overview reads.
const TICK: Duration = Duration::from_secs(1);
/// Ticks without events between two counts anyway (clean, drain and obliterate announce
/// little).
const RECOUNT: u32 = 5;
/// Ticks between two discoveries of the overview's queues.
const REDISCOVER: u32 = 10;
/// The window of the overview's rates.
const WINDOW: Duration = Duration::from_secs(60);

fn counts_json(values: &[u64]) -> Value {
    let mut map = Map::new();
    for (s, n) in STATES.iter().zip(values) {
        map.insert(s.as_str().to_owned(), json!(n));
    }
    Value::Object(map)
}

/// An event's name and job id only: return values and reasons may be large or private.
fn job_event(entry: &StreamEvent) -> Option<Event> {
    let field = |name: &str| {
        entry
            .fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let name = field("event")?;
    Some(
        Event::default()
            .event("job")
            .data(json!({"event": name, "jobId": field("jobId")}).to_string()),
    )
}

/// Where a stream reads from: the event stream after a cursor, or nothing (polling).
enum Feed {
    Events(EventId),
    Poll,
}

/// The feed of `queue`: its stream from now on, or polling when it cannot be read.
async fn feed_of(queue: &Queue<AnyBackend>) -> Feed {
    match queue.backend().last_event_id().await {
        Ok(id) => Feed::Events(id),
        Err(e) => {
            tracing::debug!(target: "bullmq_dashboard", error = %e, "no event stream: polling");
            Feed::Poll
        }
    }
}

/// `GET /c/{connection}/q/{queue}/live`: the queue's counts (event `counts`) when something
/// happened, and each event (`job`).
pub(crate) async fn queue_live(route: QueueRoute) -> Result<Response, DashboardError> {
    let opened = route.open().await?;
    // A handle of its own: its blocking reads hold a connection no other request waits on.
    let queue = Queue::try_new(opened.name.clone(), opened.queue.backend().handle())?;
    let feed = feed_of(&queue).await;
    let (conn, name) = (opened.conn.name.clone(), opened.name.as_str().to_owned());
    let counts_event = move |values: Result<Vec<u64>, DashboardError>| match values {
        Ok(values) => Event::default().event("counts").data(
            json!({"connection": conn, "queue": name, "counts": counts_json(&values)}).to_string(),
        ),
        Err(e) => Event::default().event("error").data(e.to_string()),
    };
    let events = stream::unfold(
        (queue, feed, None::<u32>),
        move |(queue, mut feed, quiet)| {
            let counts_event = counts_event.clone();
            async move {
                let mut batch = Vec::new();
                let recount = match (&mut feed, quiet) {
                    (_, None) => true,
                    (Feed::Events(cursor), Some(quiet)) => {
                        match queue.backend().read_events(cursor, TICK).await {
                            Ok(entries) if entries.is_empty() => quiet + 1 >= RECOUNT,
                            Ok(entries) => {
                                if let Some(last) = entries.last() {
                                    *cursor = last.id.clone();
                                }
                                batch.extend(entries.iter().filter_map(job_event));
                                true
                            }
                            Err(e) => {
                                tracing::debug!(target: "bullmq_dashboard", error = %e, "event stream failed: polling");
                                feed = Feed::Poll;
                                true
                            }
                        }
                    }
                    (Feed::Poll, Some(_)) => {
                        tokio::time::sleep(TICK).await;
                        true
                    }
                };
                if recount {
                    batch.push(counts_event(counts(&queue).await));
                }
                let quiet = if recount { 0 } else { quiet.unwrap_or(0) + 1 };
                let items: Vec<Result<Event, Infallible>> = batch.into_iter().map(Ok).collect();
                Some((stream::iter(items), (queue, feed, Some(quiet))))
            }
        },
    );
    Ok(sse(events.flatten()))
}

/// One queue the overview follows: its feed and the last minute's events.
struct Followed {
    conn: usize,
    queue: Queue<AnyBackend>,
    feed: Feed,
    /// When each recent `added`, `completed` and `failed` event was read.
    recent: VecDeque<(Instant, Kind)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    In,
    Completed,
    Failed,
}

impl Followed {
    /// Reads the events since the last read (not waiting); whether any came.
    async fn read(&mut self, now: Instant) -> bool {
        let Feed::Events(cursor) = &mut self.feed else {
            return true;
        };
        match self
            .queue
            .backend()
            .read_events(cursor, Duration::ZERO)
            .await
        {
            Ok(entries) => {
                if let Some(last) = entries.last() {
                    *cursor = last.id.clone();
                }
                for entry in &entries {
                    let kind = match entry.fields.first().map(|(_, v)| v.as_str()) {
                        Some("added") => Kind::In,
                        Some("completed") => Kind::Completed,
                        Some("failed") => Kind::Failed,
                        _ => continue,
                    };
                    self.recent.push_back((now, kind));
                }
                while self
                    .recent
                    .front()
                    .is_some_and(|(at, _)| now.duration_since(*at) > WINDOW)
                {
                    self.recent.pop_front();
                }
                !entries.is_empty()
            }
            Err(_) => {
                self.feed = Feed::Poll;
                true
            }
        }
    }

    /// Jobs in, out (finished), and the failed share of those out, over the window; `None`
    /// when polling.
    fn rates(&self) -> Value {
        if matches!(self.feed, Feed::Poll) {
            return Value::Null;
        }
        let of = |k: Kind| self.recent.iter().filter(|(_, kind)| *kind == k).count();
        let (added, done, failed) = (of(Kind::In), of(Kind::Completed), of(Kind::Failed));
        let out = done + failed;
        let failure = (out > 0).then(|| (failed * 100).div_ceil(out));
        json!({"in": added, "out": out, "failurePct": failure})
    }
}

/// `GET /live`: every visible queue's counts (one `counts` event per queue), recounted when
/// its event stream moved (or every few seconds), with the last minute's rates.
pub(crate) async fn overview_live(State(inner): State<Shared>, ctx: Ctx) -> Response {
    let events = stream::unfold(
        (0_u32, Vec::<Followed>::new()),
        move |(tick, mut queues)| {
            let inner = inner.clone();
            let ctx_parts = ctx.parts.clone();
            async move {
                if tick > 0 {
                    tokio::time::sleep(TICK).await;
                }
                if tick % REDISCOVER == 0 {
                    queues = discover(&inner, Ctx::for_parts(ctx_parts), queues).await;
                }
                let now = Instant::now();
                let mut batch = Vec::with_capacity(queues.len());
                for followed in &mut queues {
                    let moved = followed.read(now).await;
                    if !(moved || tick % RECOUNT == 0) {
                        continue;
                    }
                    let Some(conn) = inner.connections.get(followed.conn) else {
                        continue;
                    };
                    if let Ok(values) = counts(&followed.queue).await {
                        batch.push(Ok::<_, Infallible>(
                            Event::default().event("counts").data(
                                json!({
                                    "connection": conn.name,
                                    "queue": followed.queue.name().as_str(),
                                    "counts": counts_json(&values),
                                    "rates": followed.rates(),
                                })
                                .to_string(),
                            ),
                        ));
                    }
                }
                Some((stream::iter(batch), (tick.wrapping_add(1), queues)))
            }
        },
    );
    sse(events.flatten())
}

/// The visible queues of every connection, keeping what is known of those already followed.
async fn discover(inner: &Shared, probe: Ctx, mut known: Vec<Followed>) -> Vec<Followed> {
    let mut out = Vec::new();
    for (i, conn) in inner.connections.iter().enumerate() {
        let Ok(names) = visible(inner, &probe, conn).await else {
            continue;
        };
        // One handle per connection and stream: its reads hold no other request's connection.
        let Ok(shared) = conn.backend().await else {
            continue;
        };
        let handle = shared.handle();
        for name in names {
            if let Some(at) = known
                .iter()
                .position(|f| f.conn == i && f.queue.name() == &name)
            {
                out.push(known.swap_remove(at));
                continue;
            }
            out.extend(follow(i, &handle, name).await);
        }
    }
    out
}

/// `None` only if the store's sibling is bound to another queue than the one asked for.
async fn follow(conn: usize, handle: &AnyBackend, name: QueueName) -> Option<Followed> {
    let queue = Queue::try_new(name.clone(), handle.for_queue(&name, None)).ok()?;
    let feed = feed_of(&queue).await;
    Some(Followed {
        conn,
        queue,
        feed,
        recent: VecDeque::new(),
    })
}

fn sse<S>(events: S) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
