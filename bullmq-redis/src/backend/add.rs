//! `AddJobs` for Redis: `addStandardJob`, `addDelayedJob`, `addPrioritizedJob`,
//! `addParentJob` and, for flows, `releaseParentIfNoPendingDependencies`.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::Poll;

use bullmq_core::backend::{AddJobs, FlowNode, NewJob, ParentKeyOpts};
use bullmq_core::codec::{self, ParentAt};
use bullmq_core::error::{AddedJob, BulkAddError, PayloadTooLarge, RefusedJob, UnknownJobs};
use bullmq_core::{Job, JobId, Result, ScriptError, ScriptErrorCode};
use redis::{Cmd, ErrorKind, ServerErrorKind, Value};

use super::RedisBackend;
use crate::connection::ReplicaWait;
use crate::connection::{SharedConnection, command};
use crate::error::{unexpected, wrap};
use crate::keys::QueueKeys;
use crate::payload_limit;
use crate::replication;
use crate::script;
use crate::scripts::{self, LuaScript};
use crate::wire::{self, AddJobArgs};

/// One add-script call: the script, its `KEYS` (borrowed from the queue's keys) and its three
/// `ARGV`, written straight into one command buffer sized up front.
///
/// The general [`script::ScriptCall`] copies every key and argument into its own buffer and
/// then again into a growing command; `add_bulk` builds a thousand of these per call, so the
/// add path skips both.
struct AddCall<'a> {
    script: &'static LuaScript,
    keys: Vec<&'a str>,
    /// `ARGV[1]`: the packed add arguments.
    args: Vec<u8>,
    /// `ARGV[2]`: the job's data, as JSON.
    data: &'a str,
    /// `ARGV[3]`: the packed options.
    opts: Vec<u8>,
}

impl AddCall<'_> {
    /// `verb head numkeys KEYS... ARGV...`: `EVALSHA sha1 ...` or `EVAL text ...`.
    fn command(&self, verb: &str, head: &str) -> Cmd {
        debug_assert_eq!(
            self.keys.len(),
            self.script.num_keys,
            "{} takes {} keys",
            self.script.name,
            self.script.num_keys
        );
        let argv = [self.args.as_slice(), self.data.as_bytes(), &self.opts];
        let bytes = verb.len()
            + head.len()
            + 2
            + self.keys.iter().map(|k| k.len()).sum::<usize>()
            + argv.iter().map(|a| a.len()).sum::<usize>();
        let mut cmd = Cmd::with_capacity(3 + self.keys.len() + argv.len(), bytes);
        cmd.arg(verb).arg(head).arg(self.keys.len());
        for key in &self.keys {
            cmd.arg(*key);
        }
        for arg in argv {
            cmd.arg(arg);
        }
        cmd
    }

    /// The size of its largest argument, in bytes (keys are short, and not counted).
    fn largest(&self) -> usize {
        self.data.len().max(self.opts.len()).max(self.args.len())
    }

    /// The refusal of this call when one of its arguments is over `limit` bytes (the
    /// server's `proto-max-bulk-len`), for the job at `index` of its bulk, if any.
    fn too_large(&self, limit: u64, index: Option<usize>, job: &Job) -> Option<PayloadTooLarge> {
        let parts = [
            ("data", self.data.len()),
            ("options", self.opts.len()),
            ("arguments", self.args.len()),
        ];
        let (part, size) = parts
            .into_iter()
            .map(|(part, len)| (part, u64::try_from(len).unwrap_or(u64::MAX)))
            .find(|(_, size)| *size > limit)?;
        Some(PayloadTooLarge {
            index,
            job_name: job.name.clone(),
            part,
            size,
            limit,
            setting: payload_limit::SETTING,
        })
    }

    /// The `EVALSHA` command, for pipelines.
    fn evalsha(&self) -> Cmd {
        self.command("EVALSHA", self.script.sha1)
    }

    /// Writes `verb head numkeys KEYS... ARGV...` straight into a request buffer.
    fn write(&self, buf: &mut Vec<u8>, verb: &str, head: &str) {
        let mut count = itoa::Buffer::new();
        let key_count = count.format(self.keys.len());
        let head = [verb.as_bytes(), head.as_bytes(), key_count.as_bytes()];
        let keys = self.keys.iter().map(|k| k.as_bytes());
        let argv = [self.args.as_slice(), self.data.as_bytes(), &self.opts];
        command::write(buf, head.into_iter().chain(keys).chain(argv));
    }

    /// Runs the script, followed by `WAIT` (see [`crate::replication`]) when `wait` is set:
    /// its reply and, with `wait`, how many replicas confirmed it.
    async fn invoke_waited(
        &self,
        con: &SharedConnection,
        wait: Option<ReplicaWait>,
    ) -> redis::RedisResult<(Value, Option<i64>)> {
        let Some(wait) = wait else {
            return Ok((self.invoke(con).await?, None));
        };
        let (reply, acked) = replication::run_then_wait(
            con,
            self.script,
            |verb, head| self.command(verb, head),
            wait,
        )
        .await?;
        Ok((reply, Some(acked)))
    }

    /// Runs the script, sending its text when Redis does not have it cached (`NOSCRIPT`).
    async fn invoke(&self, con: &SharedConnection) -> redis::RedisResult<Value> {
        script::run(
            con,
            self.script,
            |buf, verb, head| self.write(buf, verb, head),
            |verb, head| self.command(verb, head),
        )
        .await
    }
}

/// Which add script a job goes through, and its call: upstream's routing.
fn add_call<'a>(
    keys: &'a QueueKeys,
    job: &'a Job,
    parent: &ParentKeyOpts,
    defer_parent_release: bool,
    parent_last: bool,
) -> Result<AddCall<'a>> {
    let dedup_key = job
        .deduplication_id
        .as_deref()
        .map(|id| keys.deduplication(id));
    let args = wire::pack_add_job_args(&AddJobArgs {
        key_prefix: &keys.job_prefix,
        custom_id: job.id.as_str(),
        name: &job.name,
        timestamp: job.timestamp,
        parent_key: parent.parent_key.as_deref().or(job.parent_key.as_deref()),
        parent_dependencies_key: parent.parent_dependencies_key.as_deref(),
        parent: job.parent.as_ref(),
        repeat_job_key: job.repeat_job_key.as_deref(),
        deduplication_key: dedup_key.as_deref(),
        defer_parent_release: defer_parent_release || parent.defer_parent_release,
    })?;
    let parent_at = if parent_last {
        ParentAt::Last
    } else {
        ParentAt::InOrder
    };
    let opts = codec::options_to_msgpack_with(&job.opts, parent_at)?;
    let (script, keys) = wire::add_script(keys, job, parent.add_to_waiting_children);
    Ok(AddCall {
        script,
        keys,
        args,
        data: &job.data,
        opts,
    })
}

/// The add scripts answer with the job id, or a negative code.
fn added_id(reply: &Value, job: &Job, parent: &ParentKeyOpts) -> Result<JobId, AddFailure> {
    match reply {
        Value::BulkString(bytes) => Ok(JobId::from(String::from_utf8_lossy(bytes).into_owned())),
        Value::SimpleString(s) => Ok(JobId::from(s.as_str())),
        Value::Int(code) => match ScriptErrorCode::try_from(*code) {
            Ok(code) => Err(AddFailure::Script(ScriptError {
                code,
                command: "addJob",
                job_id: Some(job.id.to_string()),
                parent_key: parent.parent_key.clone().or_else(|| job.parent_key.clone()),
                state: None,
            })),
            Err(_) => Err(AddFailure::Other(unexpected("add a job", reply))),
        },
        other => Err(AddFailure::Other(unexpected("add a job", other))),
    }
}

enum AddFailure {
    Script(ScriptError),
    Other(bullmq_core::Error),
}

impl From<AddFailure> for bullmq_core::Error {
    fn from(f: AddFailure) -> Self {
        match f {
            AddFailure::Script(e) => e.into(),
            AddFailure::Other(e) => e,
        }
    }
}

/// How many replicas confirmed a write, when fewer than `wait` asks.
fn shortfall(wait: Option<ReplicaWait>, acked: Option<i64>) -> Option<i64> {
    match (wait, acked) {
        (Some(wait), Some(acked)) if replication::short_of(wait, acked) => Some(acked),
        _ => None,
    }
}

/// Keeps in `fewest` the fewest replicas that confirmed any write of a bulk.
fn note_fewest(fewest: &mut Option<i64>, acked: Option<i64>) {
    if let Some(acked) = acked {
        *fewest = Some(fewest.map_or(acked, |f| f.min(acked)));
    }
}

fn is_noscript(v: &redis::RedisResult<Value>) -> bool {
    matches!(v, Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript))
}

const ADD_SCRIPTS: [&LuaScript; 5] = [
    &scripts::ADD_STANDARD_JOB,
    &scripts::ADD_DELAYED_JOB,
    &scripts::ADD_PRIORITIZED_JOB,
    &scripts::ADD_PARENT_JOB,
    &scripts::RELEASE_PARENT_IF_NO_PENDING_DEPENDENCIES,
];

/// Jobs per write of [`AddJobs::add_jobs`]: each batch is sent as soon as it is packed, so
/// that Redis runs it while the next one is packed, rather than waiting for the whole bulk.
const BULK_WRITE: usize = 128;

/// Replies of one pipelined batch of add calls, one per call.
type BatchReplies = redis::RedisResult<Vec<redis::RedisResult<Value>>>;

/// Polls `fut` once, so that the request it makes is queued on the connection now; returns
/// its output if it is already done.
async fn start<F: Future + Unpin>(fut: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| match Pin::new(&mut *fut).poll(cx) {
        Poll::Ready(out) => Poll::Ready(Some(out)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

impl AddJobs for RedisBackend {
    async fn add_job(&self, job: &Job, parent: &ParentKeyOpts) -> Result<JobId> {
        if self.con.is_cluster() {
            super::cluster::check_parent_slot(&self.keys, job, parent)?;
        }
        let call = add_call(&self.keys, job, parent, false, false)?;
        let limit = self.payload_limit(call.largest()).await?;
        if let Some(too_large) = call.too_large(limit, None, job) {
            return Err(too_large.into());
        }
        let wait = self.replica_wait();
        let (reply, acked) = call
            .invoke_waited(&self.connection(), wait)
            .await
            .map_err(wrap("add a job"))?;
        let id = added_id(&reply, job, parent)?;
        if let (Some(wait), Some(acked)) = (wait, shortfall(wait, acked)) {
            let ids = vec![id.as_str().to_owned()];
            return Err(replication::not_replicated("add a job", wait, acked, ids));
        }
        Ok(id)
    }

    async fn add_jobs(&self, jobs: &[NewJob]) -> Result<Vec<JobId>> {
        // Every job is encoded and checked before any is sent (into a vector sized up front:
        // collecting `Result`s cannot know the length, and would grow it by copying), so that
        // a job unfit to send leaves the whole bulk unwritten.
        let mut calls = Vec::with_capacity(jobs.len());
        let mut unfit = Vec::new();
        for (index, j) in jobs.iter().enumerate() {
            match self.encoded_call(j) {
                Ok(call) => calls.push(call),
                Err(error) => unfit.push(RefusedJob {
                    index: Some(index),
                    error,
                }),
            }
        }
        if unfit.is_empty() {
            // Every job encoded: the calls are in input order.
            let largest = calls.iter().map(AddCall::largest).max().unwrap_or(0);
            let limit = self.payload_limit(largest).await?;
            for (index, (call, j)) in calls.iter().zip(jobs).enumerate() {
                if let Some(too_large) = call.too_large(limit, Some(index), &j.job) {
                    unfit.push(RefusedJob {
                        index: Some(index),
                        error: too_large.into(),
                    });
                }
            }
        }
        if !unfit.is_empty() {
            return Err(BulkAddError::nothing_added(jobs.len(), unfit).into());
        }
        // Pipelined on the shared connection, one write per batch: each batch is queued as
        // soon as it is packed, and the yield lets the connection write it out, so Redis works
        // on it while the next one is packed. Replies come back in order.
        let mut batches = Vec::with_capacity(calls.len().div_ceil(BULK_WRITE));
        // With `wait_for_replicas`, each batch ends with a `WAIT` and goes on a direct
        // connection of its own (`WAIT` blocks its connection), one batch after the other so
        // that a bulk does not open a connection per batch.
        let wait = self.replica_wait();
        let mut fewest = None;
        let mut outcomes = Outcomes::new(jobs.len());
        for (n, batch) in calls.chunks(BULK_WRITE).enumerate() {
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for call in batch {
                pipe.add_command(call.evalsha());
            }
            let mut con = self.connection();
            let mut replies: Pin<Box<dyn Future<Output = BatchReplies> + Send>> = match wait {
                None => Box::pin(async move { pipe.query_async::<_>(&mut con).await }),
                Some(wait) => {
                    replication::append_wait(&mut pipe, wait);
                    let count = batch.len() + 1;
                    Box::pin(async move {
                        let replies = con.waited(&pipe, count).await?;
                        Ok(replies.into_iter().map(Value::extract_error).collect())
                    })
                }
            };
            let done: Option<BatchReplies> = if wait.is_some() {
                Some((&mut replies).await)
            } else {
                start(&mut replies).await
            };
            if let Some(Err(e)) = done {
                // Part of this batch may have run; the batches after it are not sent (and so
                // are left for a retry), those before it are read below.
                let first = n * BULK_WRITE;
                outcomes.unknown(first..first + batch.len(), wrap("add jobs")(e));
                break;
            }
            batches.push((replies, done));
            tokio::task::yield_now().await;
        }
        let con = self.connection();
        let mut index = 0;
        for (pending, done) in batches {
            let first = index;
            let end = (first + BULK_WRITE).min(calls.len());
            index = end;
            let replies = match done {
                Some(replies) => replies,
                None => pending.await,
            };
            let mut replies = match replies {
                Ok(replies) => replies,
                Err(e) => {
                    outcomes.unknown(first..end, wrap("add jobs")(e));
                    continue;
                }
            };
            if wait.is_some() {
                // The script replies decide; a refused `WAIT` counts as no replica.
                let acked = replication::acked(replies.pop().and_then(Result::ok));
                note_fewest(&mut fewest, shortfall(wait, Some(acked)));
            }
            let answered = replies.len().min(end - first);
            for (offset, reply) in replies.into_iter().take(answered).enumerate() {
                let i = first + offset;
                let (call, entry) = (&calls[i], &jobs[i]);
                // NOSCRIPT means the script did not run: run this job again on its own.
                let reply = if is_noscript(&reply) {
                    call.invoke_waited(&con, wait).await.map(|(reply, acked)| {
                        note_fewest(&mut fewest, shortfall(wait, acked));
                        reply
                    })
                } else {
                    reply
                };
                match reply {
                    Ok(reply) => match added_id(&reply, &entry.job, &entry.parent) {
                        Ok(id) => outcomes.added(i, id),
                        Err(refusal) => outcomes.refused(i, refusal.into()),
                    },
                    Err(e) if is_lost(&e) => outcomes.unknown(i..=i, wrap("add jobs")(e)),
                    Err(e) => outcomes.refused(i, wrap("add jobs")(e)),
                }
            }
            if first + answered < end {
                let missing = redis::Value::Int(i64::try_from(answered).unwrap_or(i64::MAX));
                outcomes.unknown(first + answered..end, unexpected("add jobs", &missing));
            }
        }
        let ids = outcomes.finish()?;
        if let (Some(wait), Some(acked)) = (wait, fewest) {
            let added = ids.iter().map(|id| id.as_str().to_owned()).collect();
            return Err(replication::not_replicated("add jobs", wait, acked, added));
        }
        Ok(ids)
    }

    async fn add_flow(&self, nodes: &[FlowNode]) -> Result<Vec<Result<JobId, ScriptError>>> {
        let mut con = self.connection();
        if con.is_cluster()
            && let Some(slot) = super::cluster::flow_slot(nodes)?
        {
            // The flow's queues may be other than this backend's: go to their slot's primary.
            con = con.for_slot(slot);
        }
        // EVALSHA inside MULTI cannot fall back to EVAL, so make sure Redis has the scripts.
        script::preload(&mut con, &ADD_SCRIPTS)
            .await
            .map_err(wrap("load the add scripts"))?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        let mut parents = BTreeMap::new();
        let mut limit = None;
        for (index, node) in nodes.iter().enumerate() {
            let keys = QueueKeys::new(&node.prefix, &node.queue);
            let call = add_call(&keys, &node.entry.job, &node.entry.parent, true, true)?;
            // Checked before anything is sent: the flow is refused whole. (The limit is asked
            // for once, and only for a node over 1 MB.)
            if u64::try_from(call.largest()).unwrap_or(u64::MAX)
                > payload_limit::MIN_PROTO_MAX_BULK_LEN
            {
                let limit = match limit {
                    Some(limit) => limit,
                    None => *limit.insert(self.payload_limit(call.largest()).await?),
                };
                if let Some(too_large) = call.too_large(limit, Some(index), &node.entry.job) {
                    return Err(too_large.into());
                }
            }
            pipe.add_command(call.evalsha());
            if let (Some(parent), Some(parent_key)) =
                (&node.entry.job.parent, &node.entry.parent.parent_key)
            {
                parents.insert(parent_key.clone(), parent.clone());
            }
        }
        // A parent whose children all existed already (and completed) leaves waiting-children
        // only now that the whole tree is in.
        let now = node_now(nodes);
        for (parent_key, parent) in &parents {
            let call = wire::release_parent_if_no_pending_dependencies(parent_key, parent, now);
            pipe.add_command(call.evalsha(&scripts::RELEASE_PARENT_IF_NO_PENDING_DEPENDENCIES))
                .ignore();
        }
        let replies: Vec<Value> = pipe
            .query_async(&mut con)
            .await
            .map_err(wrap("add a flow"))?;
        nodes
            .iter()
            .zip(replies)
            .map(
                |(node, reply)| match added_id(&reply, &node.entry.job, &node.entry.parent) {
                    Ok(id) => Ok(Ok(id)),
                    Err(AddFailure::Script(e)) => Ok(Err(e)),
                    Err(AddFailure::Other(e)) => Err(e),
                },
            )
            .collect()
    }
}

impl RedisBackend {
    /// The add call of a job of a bulk, refused when it cannot be sent: its parent in
    /// another slot of a cluster, or not encodable.
    fn encoded_call<'a>(&'a self, j: &'a NewJob) -> Result<AddCall<'a>> {
        if self.con.is_cluster() {
            super::cluster::check_parent_slot(&self.keys, &j.job, &j.parent)?;
        }
        add_call(&self.keys, &j.job, &j.parent, false, false)
    }
}

/// Whether a failed call may have run: its connection was lost before the answer came.
fn is_lost(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_timeout()
}

/// What became of each job of a bulk, gathered as the replies are read.
struct Outcomes {
    total: usize,
    added: Vec<AddedJob>,
    refused: Vec<RefusedJob>,
    unknown: Option<UnknownJobs>,
}

impl Outcomes {
    fn new(total: usize) -> Self {
        Self {
            total,
            added: Vec::with_capacity(total),
            refused: Vec::new(),
            unknown: None,
        }
    }

    fn added(&mut self, index: usize, id: JobId) {
        self.added.push(AddedJob { index, id });
    }

    fn refused(&mut self, index: usize, error: bullmq_core::Error) {
        self.refused.push(RefusedJob {
            index: Some(index),
            error,
        });
    }

    /// The jobs at `indices` may or may not have run; the first cause is kept.
    fn unknown(&mut self, indices: impl IntoIterator<Item = usize>, error: bullmq_core::Error) {
        match &mut self.unknown {
            Some(unknown) => unknown.indices.extend(indices),
            None => {
                self.unknown = Some(UnknownJobs {
                    indices: indices.into_iter().collect(),
                    error,
                });
            }
        }
    }

    /// The ids in input order when every job was added, else what became of each.
    fn finish(mut self) -> Result<Vec<JobId>> {
        if self.added.len() == self.total {
            return Ok(self.added.into_iter().map(|a| a.id).collect());
        }
        // A batch that failed to go out is noted before the batches sent ahead of it are read.
        if let Some(unknown) = &mut self.unknown {
            unknown.indices.sort_unstable();
        }
        Err(BulkAddError {
            total: self.total,
            added: self.added,
            refused: self.refused,
            unknown: self.unknown,
        }
        .into())
    }
}

/// The newest timestamp of the flow's jobs: the moment the caller built it.
fn node_now(nodes: &[FlowNode]) -> u64 {
    nodes
        .iter()
        .map(|n| n.entry.job.timestamp)
        .max()
        .unwrap_or_default()
}
