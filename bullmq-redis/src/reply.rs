//! Decoding script and command replies into domain types: the one place that reads
//! `redis::Value`.

use std::borrow::Cow;

use bullmq_core::Job;
use bullmq_core::job::JobDecodeError;
use redis::Value;

use crate::error::unexpected;

/// Text of a string reply (bulk or simple); `None` for nil.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An integer reply, or a string holding one (Lua numbers can come back either way).
pub(crate) fn int(v: &Value) -> Option<i64> {
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
pub(crate) fn expect_int(context: &'static str, v: &Value) -> bullmq_core::Result<i64> {
    int(v).ok_or_else(|| unexpected(context, v))
}

/// The items of an array reply (nil reads as empty).
pub(crate) fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(items) | Value::Set(items) => items,
        _ => &[],
    }
}

/// A hash field and its value, borrowed from the reply where they can be.
pub(crate) type TextPair<'a> = (Cow<'a, str>, Cow<'a, str>);

/// A flat `[field, value, field, value, …]` reply (what `HGETALL` and the scripts' `HGETALL`
/// return) as pairs of UTF-8 strings; `Err` names the field that is not UTF-8.
pub(crate) fn field_pairs<'a>(id: &str, v: &'a Value) -> Result<Vec<TextPair<'a>>, JobDecodeError> {
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
    match v {
        Value::Map(map) => map.iter().map(|(k, v)| pair(k, v)).collect(),
        other => items(other)
            .chunks_exact(2)
            .map(|kv| pair(&kv[0], &kv[1]))
            .collect(),
    }
}

/// A job from its hash fields; `None` when the hash is empty (no such job).
pub(crate) fn job(id: &str, v: &Value) -> Option<Result<Job, JobDecodeError>> {
    match field_pairs(id, v) {
        Ok(pairs) if pairs.is_empty() => None,
        Ok(pairs) => Some(Job::from_hash(id, pairs)),
        Err(e) => Some(Err(e)),
    }
}

/// The string items of an array reply (a list of job ids, say); items that are not strings are
/// skipped, nil reads as empty.
pub(crate) fn text_items(v: &Value) -> Vec<String> {
    items(v).iter().filter_map(text).collect()
}

/// A `WITHSCORES` reply as `(member, score)` pairs, scores read as whole numbers the way
/// Node.js's `parseInt` reads them: flat `[member, score, …]` on RESP2, `[[member, score], …]`
/// on RESP3.
pub(crate) fn scored_members(
    context: &'static str,
    v: &Value,
) -> bullmq_core::Result<Vec<(String, u64)>> {
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

/// The `[jobFields, jobId, rateLimitTtl, nextDelayedAt]` reply of `moveToActive` (and of the
/// scripts that fetch the next job), as upstream's `raw2NextJobData` reads it: `0` in the first
/// slot means no job. A job whose hash cannot be read still comes back, with the reason, so that
/// the worker holding its lock can fail it.
pub(crate) fn next_job(
    context: &'static str,
    v: &Value,
) -> bullmq_core::Result<bullmq_core::backend::NextJob> {
    use bullmq_core::backend::{FetchedJob, NextJob};
    let [fields, id, limit, delay] = items(v) else {
        return Err(unexpected(context, v));
    };
    let positive = |slot: &Value| int(slot).filter(|n| *n > 0).map(i64::unsigned_abs);
    let job = match fields {
        Value::Array(_) | Value::Map(_) => {
            let id = text(id).ok_or_else(|| unexpected(context, v))?;
            let decoded = job(&id, fields).unwrap_or_else(|| {
                Err(JobDecodeError {
                    job_id: id.clone(),
                    field: "(hash)",
                    reason: "the job hash is empty".to_owned(),
                })
            });
            Some(FetchedJob {
                id: id.into(),
                job: decoded,
            })
        }
        _ => None,
    };
    Ok(NextJob {
        job,
        rate_limit_ttl: positive(limit).map(std::time::Duration::from_millis),
        next_delayed_at: positive(delay),
    })
}

// Decoders for the queries, events, blocking and lifecycle sections.

/// A count: an integer reply, nil and anything unreadable reading as 0 (Node.js' `res || 0`).
pub(crate) fn count(v: &Value) -> u64 {
    int(v).and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
}

/// An array of counts, in reply order.
pub(crate) fn counts(v: &Value) -> Vec<u64> {
    items(v).iter().map(count).collect()
}

/// An array of arrays of strings (one list of job ids per type, say).
pub(crate) fn text_lists(v: &Value) -> Vec<Vec<String>> {
    items(v).iter().map(text_items).collect()
}

/// A flat `[field, value, …]` reply (or a RESP3 map) as text pairs; nil values read as empty.
pub(crate) fn text_pairs(v: &Value) -> Vec<(String, String)> {
    let pair = |k: &Value, v: &Value| (text(k).unwrap_or_default(), text(v).unwrap_or_default());
    match v {
        Value::Map(map) => map.iter().map(|(k, v)| pair(k, v)).collect(),
        other => items(other)
            .chunks_exact(2)
            .map(|kv| pair(&kv[0], &kv[1]))
            .collect(),
    }
}

/// A `SCAN`-family page, `[cursor, items]`: the next cursor and the items' reply.
pub(crate) fn scan_page<'a>(
    context: &'static str,
    v: &'a Value,
) -> bullmq_core::Result<(u64, &'a Value)> {
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
pub(crate) fn finish_status(v: &Value) -> bullmq_core::Result<bullmq_core::backend::FinishStatus> {
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
pub(crate) fn metrics(v: &Value) -> bullmq_core::Result<bullmq_core::backend::Metrics> {
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
pub(crate) fn marker(v: &Value) -> bullmq_core::Result<Option<bullmq_core::backend::Marker>> {
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
pub(crate) fn stream_events(
    v: &Value,
) -> bullmq_core::Result<Vec<bullmq_core::backend::StreamEvent>> {
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
pub(crate) struct PaginateReply<'a> {
    /// Where the scan stopped; `0` when it went round.
    pub(crate) cursor: u64,
    /// How many members the scan has passed, to resume from.
    pub(crate) offset: u64,
    /// Members, with their value for a hash.
    pub(crate) items: Vec<(String, Option<String>)>,
    /// Members in the whole set or hash.
    pub(crate) total: u64,
    /// Each item's job hash, in item order, when asked for.
    pub(crate) jobs: &'a [Value],
}

/// Reads a `paginate` reply.
pub(crate) fn paginate(v: &Value) -> bullmq_core::Result<PaginateReply<'_>> {
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
