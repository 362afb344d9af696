//! One connection that any number of calls share, their requests pipelined.
//!
//! A call appends its request to the bytes waiting to be sent and a slot for its replies to
//! a queue, both under one lock so that the two stay in the same order. A writer task sends
//! whatever has queued up in one write; a reader task parses replies as they come and fills
//! the slots in order. Under load many calls thus go out in one write and come back in one
//! read, which saves system calls on both sides: Redis reads and answers them in one pass of
//! its event loop too.
//!
//! Failures: a read or write error, a reply nobody asked for, or a call whose reply takes
//! longer than its timeout breaks the connection: every call in flight gets an error and the
//! owner opens a new one for the next call (a reply still on its way could otherwise be taken
//! for the next call's).

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use redis::{RedisError, RedisResult, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;

use super::direct::{
    self, DirectConnection, READ_CHUNK, REPLY_BEFORE_CLOSE, ReadHalf, Target, WriteHalf,
};
use super::fence::Fence;
use super::frame;

/// A shared connection; dropping it closes the connection once its writer has sent what was
/// queued.
pub(super) struct Pipelined {
    inner: Arc<Inner>,
    /// Stops the reader when the connection is dropped, should the server never close its end.
    reader: AbortHandle,
}

struct Inner {
    state: Mutex<State>,
    /// Behind sentinels: stops the writer once the primary was switched.
    fence: Option<Arc<Fence>>,
    /// Wakes the writer when requests queue up while it is idle, or when the connection breaks.
    wake_writer: Notify,
}

#[derive(Default)]
struct State {
    /// Requests not yet handed to the writer.
    out: Vec<u8>,
    /// One slot per request queued, in the order of their bytes.
    waiting: VecDeque<Waiter>,
    /// How many of the last `waiting` have their bytes in `out` (not yet sent).
    unsent: usize,
    /// The writer found nothing to send and waits for [`Inner::wake_writer`].
    writer_idle: bool,
    /// Why the connection stopped; no request is taken after.
    broken: Option<RedisError>,
}

/// The replies one call waits for.
struct Waiter {
    remaining: usize,
    replies: Vec<Value>,
    reply_to: oneshot::Sender<RedisResult<Vec<Value>>>,
}

impl Pipelined {
    /// Opens a connection (authenticated, on its database) and starts its reader and writer;
    /// the writer sends nothing once `fence` is passed.
    pub(super) async fn open(
        target: &Target,
        timeout: Duration,
        fence: Option<Arc<Fence>>,
    ) -> RedisResult<Self> {
        let (read, write) = DirectConnection::open(target, timeout).await?.into_halves();
        let inner = Arc::new(Inner {
            state: Mutex::default(),
            fence,
            wake_writer: Notify::new(),
        });
        let reader = tokio::spawn(read_replies(Arc::clone(&inner), read)).abort_handle();
        tokio::spawn(write_requests(Arc::clone(&inner), write));
        Ok(Self { inner, reader })
    }

    /// Whether the connection stopped working (the owner then replaces it).
    pub(super) fn is_broken(&self) -> bool {
        self.inner.lock().broken.is_some()
    }

    /// Queues the request `write` appends (which must draw `count` replies) and waits for its
    /// replies. Server errors stay values ([`Value::ServerError`]), as redis-rs's callers
    /// expect.
    pub(super) async fn exchange(
        &self,
        count: usize,
        timeout: Duration,
        write: impl FnOnce(&mut Vec<u8>),
    ) -> RedisResult<Vec<Value>> {
        if count == 0 {
            // Nothing to send (an empty pipeline): a request would draw replies.
            return Ok(Vec::new());
        }
        let (reply_to, replies) = oneshot::channel();
        {
            let mut state = self.inner.lock();
            if let Some(broken) = &state.broken {
                return Err(broken.clone());
            }
            write(&mut state.out);
            state.waiting.push_back(Waiter {
                remaining: count,
                replies: Vec::with_capacity(count),
                reply_to,
            });
            state.unsent += 1;
            if state.writer_idle {
                state.writer_idle = false;
                self.inner.wake_writer.notify_one();
            }
        }
        match tokio::time::timeout(timeout, replies).await {
            Ok(Ok(result)) => result,
            // Unreachable: a waiter is dropped only after it was sent the reason.
            Ok(Err(_)) => Err(closed()),
            Err(_) => {
                let e = direct::timed_out("waiting for Redis to answer");
                self.inner.break_with(&e);
                Err(e)
            }
        }
    }
}

impl Drop for Pipelined {
    fn drop(&mut self) {
        self.inner.break_with(&closed());
        self.reader.abort();
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the connection broken (the first reason stays), fails every call in flight and
    /// stops the writer.
    fn break_with(&self, e: &RedisError) {
        let waiting = {
            let mut state = self.lock();
            if state.broken.is_none() {
                state.broken = Some(e.clone());
            }
            state.unsent = 0;
            std::mem::take(&mut state.waiting)
        };
        for waiter in waiting {
            // A caller that gave up has dropped its receiver: nothing to tell.
            let _ = waiter.reply_to.send(Err(e.clone()));
        }
        self.wake_writer.notify_one();
    }

    /// Stops taking requests because the primary was switched (`e` says so): the calls whose
    /// requests were not sent (the `in_batch` last taken by the writer and those queued
    /// since) get `e` and may be retried elsewhere; those sent still get their replies.
    fn fence_off(&self, in_batch: usize, e: &RedisError) {
        let unsent = {
            let mut state = self.lock();
            if state.broken.is_none() {
                state.broken = Some(e.clone());
            }
            let count = (in_batch + state.unsent).min(state.waiting.len());
            state.unsent = 0;
            state.out.clear();
            let from = state.waiting.len() - count;
            state.waiting.split_off(from)
        };
        for waiter in unsent {
            let _ = waiter.reply_to.send(Err(e.clone()));
        }
    }

    /// Whether no call waits for a reply any more.
    fn is_drained(&self) -> bool {
        self.lock().waiting.is_empty()
    }

    /// Hands `replies` (in the order they came) to the calls waiting, the oldest first.
    /// `false` when there are more replies than requests: the stream is out of step.
    fn deliver(&self, replies: &mut Vec<Value>) -> bool {
        let mut state = self.lock();
        for reply in replies.drain(..) {
            let Some(front) = state.waiting.front_mut() else {
                return false;
            };
            front.replies.push(reply);
            front.remaining -= 1;
            if front.remaining == 0
                && let Some(done) = state.waiting.pop_front()
            {
                let _ = done.reply_to.send(Ok(done.replies));
            }
        }
        if state.broken.is_some() && state.waiting.is_empty() {
            // A fenced writer waits for the last reply before it closes the connection.
            self.wake_writer.notify_one();
        }
        true
    }
}

/// The writer: sends what has queued up, in one write each time, until the connection
/// breaks or is dropped; then closes the writing direction, so the server closes its end and
/// the reader stops too.
async fn write_requests(inner: Arc<Inner>, mut write: WriteHalf) {
    let mut batch = Vec::new();
    loop {
        let in_batch = {
            let mut state = inner.lock();
            if state.broken.is_some() {
                break;
            }
            if state.out.is_empty() {
                state.writer_idle = true;
            } else {
                // The emptied batch becomes the next queue, with its allocation.
                std::mem::swap(&mut state.out, &mut batch);
            }
            std::mem::take(&mut state.unsent)
        };
        if batch.is_empty() {
            inner.wake_writer.notified().await;
            // Calls woken by the same read of replies are ready to run now: let them queue
            // their next requests before this one goes out, so that they share its write.
            behind_ready_tasks().await;
            continue;
        }
        if let Some(Err(e)) = inner.fence.as_ref().map(|fence| fence.check()) {
            inner.fence_off(in_batch, &e);
            // Closing now could lose the replies of the requests already sent: Redis drops a
            // client whose end it finds closed. Each of them gets its reply, or times out
            // (which empties the queue).
            while !inner.is_drained() {
                inner.wake_writer.notified().await;
            }
            break;
        }
        if let Err(e) = write.write_all(&batch).await {
            // The server may have said why before it closed (a value above its
            // `proto-max-bulk-len`): let the reader hand that reply to its call and fail the
            // others with the close it then reads, rather than fail them all with the write's
            // bare "reset" at once.
            let deadline = tokio::time::Instant::now() + REPLY_BEFORE_CLOSE;
            while inner.lock().broken.is_none() {
                let woken = inner.wake_writer.notified();
                if tokio::time::timeout_at(deadline, woken).await.is_err() {
                    break;
                }
            }
            inner.break_with(&e.into());
            break;
        }
        batch.clear();
        behind_ready_tasks().await;
    }
    let _ = write.shutdown().await;
}

/// Lets the tasks already scheduled run before the writer goes on: it wakes itself and
/// returns `Pending` once, which puts it at the back of its worker's run queue. Unlike
/// `tokio::task::yield_now`, which waits for the next poll of the I/O driver, this costs no
/// system call and no latency when nothing else is ready.
async fn behind_ready_tasks() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            std::task::Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
}

/// The reader: parses replies as they arrive and hands them out, until the connection fails.
async fn read_replies(inner: Arc<Inner>, mut read: ReadHalf) {
    let mut buf = Vec::with_capacity(READ_CHUNK);
    let mut replies = Vec::new();
    let failure: RedisError = 'reading: loop {
        buf.reserve(READ_CHUNK);
        match read.read_buf(&mut buf).await {
            Ok(0) => {
                break io::Error::new(io::ErrorKind::UnexpectedEof, "Redis closed the connection")
                    .into();
            }
            Ok(_) => {}
            Err(e) => break e.into(),
        }
        let mut start = 0;
        loop {
            match frame::take_reply(&buf[start..]) {
                Ok(Some((value, len))) => {
                    replies.push(value);
                    start += len;
                }
                Ok(None) => break,
                Err(e) => break 'reading e,
            }
        }
        buf.drain(..start);
        if !inner.deliver(&mut replies) {
            break RedisError::from((
                redis::ErrorKind::Parse,
                "invalid reply from the server",
                "a reply that no request asked for".to_owned(),
            ));
        }
    };
    inner.break_with(&failure);
}

/// The error of a call on a connection that was closed.
fn closed() -> RedisError {
    io::Error::new(io::ErrorKind::NotConnected, "the connection was closed").into()
}
