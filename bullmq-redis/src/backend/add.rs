//! `AddJobs` for Redis: `addStandardJob`, `addDelayedJob`, `addPrioritizedJob`,
//! `addParentJob` and, for flows, `releaseParentIfNoPendingDependencies`.

use std::collections::BTreeMap;

use bullmq_core::backend::{AddJobs, FlowNode, NewJob, ParentKeyOpts};
use bullmq_core::codec::{self, AddJobArgs};
use bullmq_core::{Job, JobId, Result, ScriptError, ScriptErrorCode};
use redis::{ErrorKind, ServerErrorKind, Value};

use super::RedisBackend;
use crate::error::{unexpected, wrap};
use crate::keys::QueueKeys;
use crate::script::{self, ScriptCall};
use crate::scripts::{self, LuaScript};

/// Which add script a job goes through, and its call: upstream's routing.
fn add_call(
    keys: &QueueKeys,
    job: &Job,
    parent: &ParentKeyOpts,
    defer_parent_release: bool,
) -> Result<(&'static LuaScript, ScriptCall)> {
    let dedup_key = job
        .deduplication_id
        .as_deref()
        .map(|id| keys.deduplication(id));
    let args = codec::pack_add_job_args(&AddJobArgs {
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
    let opts = codec::options_to_msgpack(&job.opts)?;
    let (script, call) = if parent.add_to_waiting_children {
        let call = ScriptCall::default()
            .key(&keys.meta)
            .key(&keys.id)
            .key(&keys.delayed)
            .key(&keys.waiting_children)
            .key(&keys.completed)
            .key(&keys.events);
        (&scripts::ADD_PARENT_JOB, call)
    } else if job.opts.is_delayed() {
        let call = ScriptCall::default()
            .key(&keys.marker)
            .key(&keys.meta)
            .key(&keys.id)
            .key(&keys.delayed)
            .key(&keys.completed)
            .key(&keys.events);
        (&scripts::ADD_DELAYED_JOB, call)
    } else if job.opts.is_prioritized() {
        let call = ScriptCall::default()
            .key(&keys.marker)
            .key(&keys.meta)
            .key(&keys.id)
            .key(&keys.prioritized)
            .key(&keys.delayed)
            .key(&keys.completed)
            .key(&keys.active)
            .key(&keys.events)
            .key(&keys.priority_counter);
        (&scripts::ADD_PRIORITIZED_JOB, call)
    } else {
        let call = ScriptCall::default()
            .key(&keys.wait)
            .key(&keys.paused)
            .key(&keys.meta)
            .key(&keys.id)
            .key(&keys.completed)
            .key(&keys.delayed)
            .key(&keys.active)
            .key(&keys.events)
            .key(&keys.marker);
        (&scripts::ADD_STANDARD_JOB, call)
    };
    Ok((script, call.arg(args).arg(&job.data).arg(opts)))
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

impl AddJobs for RedisBackend {
    async fn add_job(&self, job: &Job, parent: &ParentKeyOpts) -> Result<JobId> {
        let (script, call) = add_call(&self.keys, job, parent, false)?;
        let reply = call
            .invoke(&mut self.connection(), script)
            .await
            .map_err(wrap("add a job"))?;
        Ok(added_id(&reply, job, parent)?)
    }

    async fn add_jobs(&self, jobs: &[NewJob]) -> Result<Vec<JobId>> {
        let mut con = self.connection();
        let calls = jobs
            .iter()
            .map(|j| add_call(&self.keys, &j.job, &j.parent, false))
            .collect::<Result<Vec<_>>>()?;
        // One round trip for all; a job whose script Redis had not cached is run again on its
        // own (a NOSCRIPT reply means the script did not run).
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for (script, call) in &calls {
            pipe.add_command(call.evalsha(script));
        }
        let replies: Vec<redis::RedisResult<Value>> =
            pipe.query_async(&mut con).await.map_err(wrap("add jobs"))?;
        let mut ids = Vec::with_capacity(jobs.len());
        for ((reply, (script, call)), entry) in replies.into_iter().zip(&calls).zip(jobs) {
            let reply = if is_noscript(&reply) {
                call.invoke(&mut con, script).await
            } else {
                reply
            };
            let reply = reply.map_err(wrap("add jobs"))?;
            ids.push(added_id(&reply, &entry.job, &entry.parent)?);
        }
        Ok(ids)
    }

    async fn add_flow(&self, nodes: &[FlowNode]) -> Result<Vec<Result<JobId, ScriptError>>> {
        let mut con = self.connection();
        // EVALSHA inside MULTI cannot fall back to EVAL, so make sure Redis has the scripts.
        script::preload(&mut con, &ADD_SCRIPTS)
            .await
            .map_err(wrap("load the add scripts"))?;
        let mut pipe = redis::pipe();
        pipe.atomic();
        let mut parents = BTreeMap::new();
        for node in nodes {
            let keys = QueueKeys::new(&node.prefix, &node.queue);
            let (script, call) = add_call(&keys, &node.entry.job, &node.entry.parent, true)?;
            pipe.add_command(call.evalsha(script));
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
            let call = ScriptCall::default()
                .key(parent_key)
                .key(format!("{parent_key}:dependencies"))
                .arg(&parent.queue_key)
                .arg(parent.id.as_deref().unwrap_or_default())
                .arg(now);
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

/// The newest timestamp of the flow's jobs: the moment the caller built it.
fn node_now(nodes: &[FlowNode]) -> u64 {
    nodes
        .iter()
        .map(|n| n.entry.job.timestamp)
        .max()
        .unwrap_or_default()
}
