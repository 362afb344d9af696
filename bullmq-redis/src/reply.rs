//! Decoding script and command replies into domain types: the one place that reads
//! `redis::Value`.

use std::borrow::Cow;

use bullmq_core::job::JobDecodeError;
use bullmq_core::{Job, JobId};
use redis::Value;

use crate::error::unexpected;

/// Text of a string reply (bulk or simple); `None` for nil.
pub fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An integer reply, or a string holding one (Lua numbers can come back either way).
pub fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        Value::BulkString(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        Value::SimpleString(s) => s.trim().parse().ok(),
        Value::Double(d) if d.fract() == 0.0 =>
        {
            #[allow(clippy::cast_possible_truncation)]
            Some(*d as i64)
        }
        _ => None,
    }
}

/// An integer reply, or an error naming what was being read.
pub fn expect_int(context: &'static str, v: &Value) -> bullmq_core::Result<i64> {
    int(v).ok_or_else(|| unexpected(context, v))
}

/// The items of an array reply (nil reads as empty).
pub fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) | Value::Set(items) => items,
        _ => &[],
    }
}

/// The `(field, value)` entries of a hash reply: a RESP3 map, or the flat RESP2
/// `[field, value, …]` array (a trailing field without a value is dropped).
fn hash_entries(v: &Value) -> impl Iterator<Item = (&Value, &Value)> {
    let (map, flat): (&[(Value, Value)], &[Value]) = match v {
        Value::Map(map) => (map, &[]),
        other => (&[], items(other)),
    };
    map.iter()
        .map(|(k, v)| (k, v))
        .chain(flat.chunks_exact(2).map(|kv| (&kv[0], &kv[1])))
}

/// A hash field and its value, borrowed from the reply where they can be.
pub type TextPair<'a> = (Cow<'a, str>, Cow<'a, str>);

/// A flat `[field, value, field, value, …]` reply (what `HGETALL` and the scripts' `HGETALL`
/// return) as pairs of UTF-8 strings; `Err` names the field that is not UTF-8.
pub fn field_pairs<'a>(id: &str, v: &'a Value) -> Result<Vec<TextPair<'a>>, JobDecodeError> {
    // Borrowed from the reply where it holds bulk strings (always, from the scripts): a job
    // hash is read on every fetch, and copying each field would cost an allocation apiece.
    let pair = |k: &'a Value, v: &'a Value| {
        let key = match k {
            Value::BulkString(b) => String::from_utf8_lossy(b),
            other => Cow::Owned(text(other).unwrap_or_default()),
        };
        let value = match v {
            Value::BulkString(b) => {
                Cow::Borrowed(std::str::from_utf8(b).map_err(|_| JobDecodeError {
                    job_id: id.to_owned(),
                    field: "(hash)",
                    reason: format!("field {key:?} is not UTF-8"),
                })?)
            }
            other => Cow::Owned(text(other).unwrap_or_default()),
        };
        Ok((key, value))
    };
    hash_entries(v).map(|(k, v)| pair(k, v)).collect()
}

/// A job from its hash fields; `None` when the hash is empty (no such job).
pub fn job(id: &str, v: &Value) -> Option<Result<Job, JobDecodeError>> {
    match field_pairs(id, v) {
        Ok(pairs) if pairs.is_empty() => None,
        Ok(pairs) => Some(Job::from_hash(id, pairs)),
        Err(e) => Some(Err(e)),
    }
}

/// The string items of an array reply (a list of job ids, say); items that are not strings are
/// skipped, nil reads as empty.
pub fn text_items(v: &Value) -> Vec<String> {
    items(v).iter().filter_map(text).collect()
}

/// A `WITHSCORES` reply as `(member, score)` pairs, scores read as whole numbers the way
/// Node.js's `parseInt` reads them: flat `[member, score, …]` on RESP2, `[[member, score], …]`
/// on RESP3.
pub fn scored_members(context: &'static str, v: &Value) -> bullmq_core::Result<Vec<(String, u64)>> {
    let whole = |score: &Value| -> Option<u64> {
        let n = int(score).or_else(|| {
            let f = match score {
                Value::Double(d) => *d,
                other => text(other)?.trim().parse::<f64>().ok()?,
            };
            // Scores are timestamps in ms: finite and far below 2^63.
            #[allow(clippy::cast_possible_truncation)]
            f.is_finite().then_some(f.trunc() as i64)
        })?;
        u64::try_from(n).ok()
    };
    let pair = |member: &Value, score: &Value| Some((text(member)?, whole(score)?));
    let all = items(v);
    let pairs: Option<Vec<_>> = if all.iter().all(|i| matches!(i, Value::Array(_))) {
        all.iter()
            .map(|i| match items(i) {
                [member, score] => pair(member, score),
                _ => None,
            })
            .collect()
    } else if all.len().is_multiple_of(2) {
        all.chunks_exact(2).map(|kv| pair(&kv[0], &kv[1])).collect()
    } else {
        None
    };
    pairs.ok_or_else(|| unexpected(context, v))
}

/// A job id reply with its exact bytes (another runtime may have written one that is not UTF-8).
pub fn job_id(v: &Value) -> Option<JobId> {
    match v {
        Value::BulkString(b) => Some(JobId::from_bytes(b)),
        other => text(other).map(JobId::from),
    }
}

/// The job ids of an array reply, each with its exact bytes; nil reads as empty.
pub fn id_items(v: &Value) -> Vec<JobId> {
    items(v).iter().filter_map(job_id).collect()
}

/// The fields `moveToActive` writes itself: a hash holding only these had no job before the
/// fetch (an id in the list whose hash is gone).
const FETCH_WRITES: [&str; 3] = ["processedOn", "ats", "pb"];

/// A fetched job from its id and its hash fields, as the scripts return them. A hash that
/// cannot be read still gives the id, with the reason, so that the worker can fail the job.
pub fn fetched_job(id: JobId, fields: &Value) -> bullmq_core::backend::FetchedJob {
    let decoded = match field_pairs(id.as_str(), fields) {
        Ok(pairs)
            if pairs
                .iter()
                .all(|(k, _)| FETCH_WRITES.contains(&k.as_ref())) =>
        {
            // Node would run it as a job with no name and `{}`; it never was one.
            Err(JobDecodeError {
                job_id: id.to_string(),
                field: "(hash)",
                reason: "the id was in the queue's list but its job hash did not exist; \
                         failed without running (remove the id from the list, or add the job \
                         again)"
                    .to_owned(),
            })
        }
        Ok(pairs) => Job::from_hash(id.as_str(), pairs).map(|mut job| {
            // The id with its exact bytes, not its text (copied only when they differ: a
            // UTF-8 id, nearly every one, already is).
            if job.id != id {
                job.id = id.clone();
            }
            job
        }),
        Err(e) => Err(e),
    };
    bullmq_core::backend::FetchedJob { id, job: decoded }
}

/// The `[jobFields, jobId, rateLimitTtl, nextDelayedAt]` reply of `moveToActive` (and of the
/// scripts that fetch the next job), as upstream's `raw2NextJobData` reads it: `0` in the first
/// slot means no job. A job whose hash cannot be read still comes back, with the reason, so that
/// the worker holding its lock can fail it.
pub fn next_job(
    context: &'static str,
    v: &Value,
) -> bullmq_core::Result<bullmq_core::backend::NextJob> {
    use bullmq_core::backend::NextJob;
    let [fields, id, limit, delay] = items(v) else {
        return Err(unexpected(context, v));
    };
    let positive = |slot: &Value| int(slot).filter(|n| *n > 0).map(i64::unsigned_abs);
    let job = match fields {
        Value::Array(_) | Value::Map(_) => {
            let id = job_id(id).ok_or_else(|| unexpected(context, v))?;
            Some(fetched_job(id, fields))
        }
        _ => None,
    };
    Ok(NextJob {
        job,
        rate_limit_ttl: positive(limit).map(std::time::Duration::from_millis),
        next_delayed_at: positive(delay),
    })
}

/// The hash fields of a fetch reply (the first slot of [`next_job`]'s reply).
pub fn fetched_fields(v: &Value) -> Option<&Value> {
    match items(v).first() {
        Some(fields @ (Value::Array(_) | Value::Map(_))) => Some(fields),
        _ => None,
    }
}

/// Whether a fetched job's hash needs a closer look before the worker runs it: a counter the
/// scripts cannot increment, a legacy `attemptsMade`, a `parent` that may not be an object, or a
/// `finishedOn` (a finished job fetched again: its id was in the list twice). Reads the reply
/// in place, without copying, since it runs on every fetch.
pub fn needs_attention(fields: &Value) -> bool {
    fn bytes(v: &Value) -> Option<&[u8]> {
        match v {
            Value::BulkString(b) => Some(b.as_slice()),
            Value::SimpleString(s) => Some(s.as_bytes()),
            _ => None,
        }
    }
    let canonical = |v: &[u8]| {
        !v.is_empty()
            && v.len() <= 9
            && v.iter().all(u8::is_ascii_digit)
            && (v == b"0" || v[0] != b'0')
    };
    let check = |k: &Value, v: &Value| {
        let (Some(k), Some(v)) = (bytes(k), bytes(v)) else {
            return false;
        };
        match k {
            b"atm" | b"ats" | b"stc" => !v.is_empty() && !canonical(v),
            b"attemptsMade" => !v.is_empty(),
            // Only a flow's children have one; the scripts `cjson.decode` it and index it.
            b"parent" => {
                !v.is_empty()
                    && serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(v)
                        .is_err()
            }
            b"finishedOn" => !v.is_empty(),
            _ => false,
        }
    };
    hash_entries(fields).any(|(k, v)| check(k, v))
}

// Decoders for the queries, events, blocking and lifecycle sections.

/// A count: an integer reply, nil and anything unreadable reading as 0 (Node.js' `res || 0`).
pub fn count(v: &Value) -> u64 {
    int(v).and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
}

/// An array of counts, in reply order.
pub fn counts(v: &Value) -> Vec<u64> {
    items(v).iter().map(count).collect()
}

/// A flat `[field, value, …]` reply (or a RESP3 map) as text pairs; nil values read as empty.
pub fn text_pairs(v: &Value) -> Vec<(String, String)> {
    hash_entries(v)
        .map(|(k, v)| (text(k).unwrap_or_default(), text(v).unwrap_or_default()))
        .collect()
}

/// A `SCAN`-family page, `[cursor, items]`: the next cursor and the items' reply.
pub fn scan_page<'a>(context: &'static str, v: &'a Value) -> bullmq_core::Result<(u64, &'a Value)> {
    match items(v) {
        [cursor, page] => int(cursor)
            .and_then(|c| u64::try_from(c).ok())
            .map(|c| (c, page))
            .ok_or_else(|| unexpected(context, v)),
        _ => Err(unexpected(context, v)),
    }
}

/// `isFinished`'s reply when asked for the value: `{code, value?}` with code -1 (no job),
/// 0 (pending), 1 (completed, return value) or 2 (failed, reason).
pub fn finish_status(v: &Value) -> bullmq_core::Result<bullmq_core::backend::FinishStatus> {
    use bullmq_core::backend::FinishStatus;
    let parts = items(v);
    let value = || parts.get(1).and_then(text);
    match parts.first().and_then(int) {
        Some(-1) => Ok(FinishStatus::Missing),
        Some(0) => Ok(FinishStatus::Pending),
        Some(1) => Ok(FinishStatus::Completed(value())),
        Some(2) => Ok(FinishStatus::Failed(value())),
        _ => Err(unexpected("check whether a job finished", v)),
    }
}

/// `getMetrics`' `[[count, prevTS, prevCount], dataPoints, numPoints]`, read as Node.js'
/// `Queue#getMetrics` does: missing or unreadable numbers are 0.
pub fn metrics(v: &Value) -> bullmq_core::Result<bullmq_core::backend::Metrics> {
    let [meta, data, points] = items(v) else {
        return Err(unexpected("read metrics", v));
    };
    let meta = items(meta);
    let field = |i: usize| meta.get(i).map_or(0, count);
    Ok(bullmq_core::backend::Metrics {
        data: counts(data),
        count: count(points),
        total: field(0),
        prev_ts: field(1),
        prev_count: field(2),
    })
}

/// A sorted-set score as Node.js' `parseInt` reads it: the whole part.
fn whole_score(v: &Value) -> Option<u64> {
    let f = match v {
        Value::Double(d) => *d,
        other => text(other)?.trim().parse::<f64>().ok()?,
    };
    // Marker scores are timestamps in ms, far below 2^63.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (f.is_finite() && f >= 0.0).then_some(f.trunc() as u64)
}

/// `BZPOPMIN`'s `[key, member, score]`, or nil on timeout. An empty member reads as no marker,
/// as in Node.js.
pub fn marker(v: &Value) -> bullmq_core::Result<Option<bullmq_core::backend::Marker>> {
    if matches!(v, Value::Nil) {
        return Ok(None);
    }
    let [_, member, score] = items(v) else {
        return Err(unexpected("wait for a job", v));
    };
    let member = text(member).unwrap_or_default();
    if member.is_empty() {
        return Ok(None);
    }
    let score = whole_score(score).ok_or_else(|| unexpected("wait for a job", v))?;
    Ok(Some(bullmq_core::backend::Marker { member, score }))
}

/// `XREAD`'s entries of every stream in the reply (RESP2 `[[key, entries]]` or a RESP3 map);
/// nil (timeout) reads as none.
pub fn stream_events(v: &Value) -> bullmq_core::Result<Vec<bullmq_core::backend::StreamEvent>> {
    use bullmq_core::backend::{EventId, StreamEvent};
    let streams: Vec<&Value> = match v {
        Value::Nil => return Ok(Vec::new()),
        Value::Map(map) => map.iter().map(|(_, entries)| entries).collect(),
        other => items(other)
            .iter()
            .filter_map(|s| items(s).get(1))
            .collect(),
    };
    let mut out = Vec::new();
    for entry in streams.into_iter().flat_map(items) {
        let [id, fields] = items(entry) else {
            return Err(unexpected("read events", v));
        };
        let id = text(id).ok_or_else(|| unexpected("read events", v))?;
        out.push(StreamEvent {
            id: EventId::new(id),
            fields: text_pairs(fields),
        });
    }
    Ok(out)
}

/// One call of the `paginate` script: `[cursor, offset, items, total, jobs?]`.
pub struct PaginateReply<'a> {
    /// Where the scan stopped; `0` when it went round.
    pub cursor: u64,
    /// How many members the scan has passed, to resume from.
    pub offset: u64,
    /// Members, with their value for a hash.
    pub items: Vec<(String, Option<String>)>,
    /// Members in the whole set or hash.
    pub total: u64,
    /// Each item's job hash, in item order, when asked for.
    pub jobs: &'a [Value],
}

/// Reads a `paginate` reply.
pub fn paginate(v: &Value) -> bullmq_core::Result<PaginateReply<'_>> {
    let parts = items(v);
    let (Some(cursor), Some(offset), Some(page), Some(total)) =
        (parts.first(), parts.get(1), parts.get(2), parts.get(3))
    else {
        return Err(unexpected("paginate", v));
    };
    let item = |i: &Value| match i {
        Value::Array(kv) => match kv.as_slice() {
            [k, v] => Some((text(k)?, text(v))),
            _ => None,
        },
        other => Some((text(other)?, None)),
    };
    let page: Option<Vec<_>> = items(page).iter().map(item).collect();
    let cursor = int(cursor).and_then(|c| u64::try_from(c).ok());
    let offset = int(offset).and_then(|c| u64::try_from(c).ok());
    match (cursor, offset, page) {
        (Some(cursor), Some(offset), Some(items_)) => Ok(PaginateReply {
            cursor,
            offset,
            items: items_,
            total: count(total),
            jobs: parts.get(4).map_or(&[], items),
        }),
        _ => Err(unexpected("paginate", v)),
    }
}
