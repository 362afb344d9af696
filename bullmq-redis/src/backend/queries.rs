//! `Queries` for Redis: upstream's read-only scripts (`getStateV2`, `isFinished`, `isMaxed`,
//! `getRateLimitTtl`, `getCounts`, `getCountsPerPriority`, `getRanges`, `getDependencyCounts`,
//! `getMetrics`, `paginate`; their calls built in [`crate::wire`]) and the plain commands
//! Node.js issues for the rest.

use std::time::Duration;

use bullmq_core::backend::{
    ClientInfo, ClientRole, Dependencies, DependenciesQuery, DependencyKind, FinishStatus, JobLogs,
    Lifecycle, Metrics, Page, Queries, Range, RangeIds, SCALING_LOOKAHEAD, ScalingObservation,
    ScalingSignals,
};
use bullmq_core::job::{FinishedState, JobType};
use bullmq_core::{Error, Job, JobId, JobState, Result};
use redis::{Cmd, Value};

use super::RedisBackend;
use super::lifecycle::parse_node_key;
use crate::error::{unexpected, wrap};
use crate::reply;
use crate::script::ScriptCall;
use crate::scripts::{self, LuaScript};
use crate::wire;

/// The low bits of a delayed job's score that order jobs due in the same millisecond
/// (`score = due_ms * 0x1000 + counter`, upstream's `getDelayedScore`).
const DELAYED_SCORE_SHIFT: u32 = 12;

/// A legacy (BullMQ 5) marker at the tail of the wait list, which no job's id looks like.
fn is_legacy_marker(entry: &str) -> bool {
    entry.starts_with("0:")
}

/// The key suffix of a parent's dependency list.
fn dependency_suffix(kind: DependencyKind) -> &'static str {
    match kind {
        DependencyKind::Processed => "processed",
        DependencyKind::Unprocessed => "dependencies",
        DependencyKind::Ignored => "failed",
        DependencyKind::Failed => "unsuccessful",
    }
}

/// `CLIENT LIST` text as Node.js' `parseClientList` reads it (lines of space-separated
/// `key=value`), keeping the clients whose name `keep` accepts.
fn parse_client_list(list: &str, keep: impl Fn(&str) -> bool) -> Vec<ClientInfo> {
    list.lines()
        .filter_map(|line| {
            let raw: Vec<(String, String)> = line
                .split(' ')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let field = |key: &str| raw.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
            let name = field("name").filter(|n| keep(n))?;
            let addr = field("addr").unwrap_or_default();
            let age = field("age").and_then(|s| s.parse().ok());
            let idle = field("idle").and_then(|s| s.parse().ok());
            Some(ClientInfo {
                name,
                addr,
                age,
                idle,
                raw,
            })
        })
        .collect()
}

/// `LRANGE` bounds for a log page: oldest-first slices as asked, newest-first ones counted
/// from the tail (and turned around after), as Node.js' `getJobLogs` does.
fn log_bounds(range: Range) -> (i64, i64) {
    if range.asc {
        (range.start, range.end)
    } else {
        let from_tail = |i: i64| i.saturating_add(1).saturating_neg();
        (from_tail(range.end), from_tail(range.start))
    }
}

impl RedisBackend {
    /// Runs a counting script: one count per thing asked, in the order asked.
    async fn run_counts(
        &self,
        call: ScriptCall,
        script: &LuaScript,
        what: &'static str,
    ) -> Result<Vec<u64>> {
        let counts = self.run(call, script, what).await?;
        Ok(reply::counts(&counts))
    }

    /// Runs `commands` in one round trip (`MULTI` when `atomic`), one reply each.
    async fn pipeline(
        &self,
        commands: &[Cmd],
        atomic: bool,
        what: &'static str,
    ) -> Result<Vec<Value>> {
        let mut pipe = redis::pipe();
        if atomic {
            pipe.atomic();
        }
        for cmd in commands {
            pipe.add_command(cmd.clone());
        }
        pipe.query_async(&mut self.connection())
            .await
            .map_err(wrap(what))
    }

    /// `<prefix>:<queue>:<id>:<suffix>`, with the id's exact bytes.
    fn job_part(&self, job_id: &JobId, suffix: &str) -> Vec<u8> {
        self.keys().job_key(job_id, &format!(":{suffix}"))
    }

    /// `LPOS` (Redis 6.0.6 and later, as `getStateV2` needs too).
    async fn in_list(&self, list: &str, job_id: &JobId) -> Result<bool> {
        let at: Option<i64> = redis::cmd("LPOS")
            .arg(self.keys().to_key(list))
            .arg(job_id.as_bytes())
            .query_async(&mut self.connection())
            .await
            .map_err(wrap("look for a job in a list"))?;
        Ok(at.is_some())
    }

    /// Every entry of all four dependency lists (Node.js' `getDependencies` without options).
    async fn all_dependencies(&self, job_id: &JobId) -> Result<Dependencies> {
        let key = |suffix| self.job_part(job_id, suffix);
        let mut unsuccessful = redis::cmd("ZRANGE");
        unsuccessful.arg(key("unsuccessful")).arg(0).arg(-1);
        let commands = [
            redis::cmd("HGETALL").arg(key("processed")).clone(),
            redis::cmd("SMEMBERS").arg(key("dependencies")).clone(),
            redis::cmd("HGETALL").arg(key("failed")).clone(),
            unsuccessful,
        ];
        let replies = self
            .pipeline(&commands, false, "read a job's dependencies")
            .await?;
        let [processed, unprocessed, ignored, failed] = replies.as_slice() else {
            return Err(unexpected(
                "read a job's dependencies",
                &Value::Array(replies.clone()),
            ));
        };
        Ok(Dependencies {
            processed: Some((reply::text_pairs(processed), 0)),
            unprocessed: Some((reply::text_items(unprocessed), 0)),
            ignored: Some((reply::text_pairs(ignored), 0)),
            failed: Some((reply::text_items(failed), 0)),
        })
    }

    /// The command reading one page of one dependency list.
    fn dependency_page(
        &self,
        job_id: &JobId,
        kind: DependencyKind,
        cursor: u64,
        count: u64,
    ) -> Cmd {
        let key = self.job_part(job_id, dependency_suffix(kind));
        match kind {
            DependencyKind::Processed | DependencyKind::Ignored => redis::cmd("HSCAN")
                .arg(key)
                .arg(cursor)
                .arg("COUNT")
                .arg(count)
                .clone(),
            DependencyKind::Unprocessed => redis::cmd("SSCAN")
                .arg(key)
                .arg(cursor)
                .arg("COUNT")
                .arg(count)
                .clone(),
            // The failed children are a sorted set: the cursor is an offset.
            // `1 0` is an empty range: a page of nothing must not read as `0 -1` (everything).
            DependencyKind::Failed if count == 0 => {
                redis::cmd("ZRANGE").arg(key).arg(1).arg(0).clone()
            }
            DependencyKind::Failed => {
                let last = cursor.saturating_add(count - 1);
                redis::cmd("ZRANGE").arg(key).arg(cursor).arg(last).clone()
            }
        }
    }

    /// One `paginate` call and the loop around it, as Node.js' `paginate`.
    async fn paginate_key(
        &self,
        key: &[u8],
        start: u64,
        end: Option<u64>,
        fetch_jobs: bool,
    ) -> Result<Page> {
        let page_size = end.map(|end| end.saturating_add(1).saturating_sub(start));
        let end_arg = end.map_or(-1, |e| i64::try_from(e).unwrap_or(i64::MAX));
        let (mut cursor, mut offset) = (0_u64, 0_u64);
        let mut page = Page::default();
        loop {
            let taken = u64::try_from(page.items.len()).unwrap_or(u64::MAX);
            let range = (start.saturating_add(taken), end_arg);
            let call = wire::paginate(key, range, cursor, offset, fetch_jobs);
            let raw = self
                .run(call, &scripts::PAGINATE, "paginate dependencies")
                .await?;
            let got = reply::paginate(&raw)?;
            (cursor, offset, page.total) = (got.cursor, got.offset, got.total);
            for ((member, _), fields) in got.items.iter().zip(got.jobs) {
                let id = parse_node_key(member).map_or_else(|| member.clone(), |k| k.id);
                // An empty hash: the child is gone.
                let read = reply::job(&id, fields).transpose().map_err(Into::into);
                page.push_read(&JobId::from(id), read)?;
            }
            page.items.extend(got.items);
            let taken = u64::try_from(page.items.len()).unwrap_or(u64::MAX);
            if cursor == 0 || page_size.is_some_and(|size| taken >= size) {
                break;
            }
        }
        page.cursor = cursor;
        Ok(page)
    }
}

impl Queries for RedisBackend {
    /// `getStateV2`; its `unknown` (no such job) is `None`.
    async fn get_state(&self, job_id: &JobId) -> Result<Option<JobState>> {
        let call = wire::get_state(self.keys(), job_id);
        let state = self
            .run(call, &scripts::GET_STATE_V2, "read a job's state")
            .await?;
        match reply::text(&state).as_deref() {
            Some("unknown") => Ok(None),
            Some(name) => name
                .parse()
                .map(Some)
                .map_err(|_| unexpected("read a job's state", &state)),
            None => Err(unexpected("read a job's state", &state)),
        }
    }

    /// `isFinished`, asking for the return value or failure reason.
    async fn is_finished(&self, job_id: &JobId) -> Result<FinishStatus> {
        let call = wire::is_finished(self.keys(), job_id);
        let status = self
            .run(call, &scripts::IS_FINISHED, "check whether a job finished")
            .await?;
        reply::finish_status(&status)
    }

    async fn is_maxed(&self) -> Result<bool> {
        let call = wire::is_maxed(self.keys());
        let maxed = self
            .run(call, &scripts::IS_MAXED, "check the global concurrency")
            .await?;
        Ok(reply::count(&maxed) == 1)
    }

    /// `LPOS` for the lists (`waiting` is the `wait` or the legacy `paused` list), `ZSCORE`
    /// for the sorted sets, as Node.js' `isJobInState`.
    async fn is_job_in_state(&self, state: JobState, job_id: &JobId) -> Result<bool> {
        match state {
            JobState::Waiting => {
                Ok(self.in_list("wait", job_id).await? || self.in_list("paused", job_id).await?)
            }
            JobState::Active => self.in_list("active", job_id).await,
            sorted => {
                let score: Option<f64> = redis::cmd("ZSCORE")
                    .arg(self.keys().to_key(sorted.as_str()))
                    .arg(job_id.as_bytes())
                    .query_async(&mut self.connection())
                    .await
                    .map_err(wrap("look for a job in a sorted set"))?;
                Ok(score.is_some())
            }
        }
    }

    /// `HGETALL` of the job hash; a hash that cannot be read is `Error::JobDecode`.
    async fn get_job(&self, job_id: &JobId) -> Result<Option<Job>> {
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(self.keys().job_key(job_id, ""));
        let fields = self.query(&cmd, "read a job").await?;
        match reply::job(job_id.as_str(), &fields) {
            None => Ok(None),
            Some(job) => {
                let mut job = job?;
                job.id = job_id.clone();
                Ok(Some(job))
            }
        }
    }

    /// `GET <prefix>:<queue>:de:<id>`.
    async fn get_deduplication_job_id(&self, deduplication_id: &str) -> Result<Option<JobId>> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(self.keys().deduplication(deduplication_id));
        let id = self.query(&cmd, "read a deduplication key").await?;
        Ok(reply::text(&id).map(JobId::from))
    }

    /// `LRANGE` and `LLEN` of `<job>:logs` in one `MULTI`, as Node.js.
    async fn get_job_logs(&self, job_id: &JobId, range: Range) -> Result<JobLogs> {
        let key = self.job_part(job_id, "logs");
        let (start, end) = log_bounds(range);
        let commands = [
            redis::cmd("LRANGE").arg(&key).arg(start).arg(end).clone(),
            redis::cmd("LLEN").arg(&key).clone(),
        ];
        let replies = self.pipeline(&commands, true, "read a job's logs").await?;
        let [lines, count] = replies.as_slice() else {
            return Err(unexpected(
                "read a job's logs",
                &Value::Array(replies.clone()),
            ));
        };
        let mut logs = reply::text_items(lines);
        if !range.asc {
            logs.reverse();
        }
        Ok(JobLogs {
            logs,
            count: reply::count(count),
        })
    }

    /// `getRateLimitTtl`; `None` for `max_jobs` lets the script use the queue's global limit.
    async fn get_rate_limit_ttl(&self, max_jobs: Option<u64>) -> Result<Duration> {
        let call = wire::get_rate_limit_ttl(self.keys(), max_jobs);
        let ttl = self
            .run(call, &scripts::GET_RATE_LIMIT_TTL, "read the rate limit")
            .await?;
        // -1 (no expiry) and -2 (no key) mean not limited for our purpose.
        Ok(Duration::from_millis(reply::count(&ttl)))
    }

    async fn get_counts(&self, types: &[JobType], delayed_before: Option<u64>) -> Result<Vec<u64>> {
        let call = wire::get_counts(self.keys(), types, delayed_before);
        self.run_counts(call, &scripts::GET_COUNTS, "count jobs")
            .await
    }

    async fn get_counts_per_priority(&self, priorities: &[u32]) -> Result<Vec<u64>> {
        let call = wire::get_counts_per_priority(self.keys(), priorities);
        self.run_counts(
            call,
            &scripts::GET_COUNTS_PER_PRIORITY,
            "count jobs per priority",
        )
        .await
    }

    /// `getRanges`, then what Node.js' `Queue#getRanges` does with it: list slices read
    /// oldest first are turned around, and an id met twice is kept once, where first met.
    async fn get_ranges(&self, types: &[JobType], range: Range) -> Result<Vec<JobId>> {
        let call = wire::get_ranges(self.keys(), types, range);
        let lists = self.run(call, &scripts::GET_RANGES, "list job ids").await?;
        let mut merged = RangeIds::new(range);
        // Ids with their exact bytes: one another runtime wrote may not be UTF-8.
        for (t, list) in types.iter().zip(reply::items(&lists)) {
            merged.push(*t, reply::id_items(list));
        }
        Ok(merged.into_ids())
    }

    async fn get_dependency_counts(
        &self,
        job_id: &JobId,
        kinds: &[DependencyKind],
    ) -> Result<Vec<u64>> {
        let call = wire::get_dependency_counts(self.keys(), job_id, kinds);
        self.run_counts(
            call,
            &scripts::GET_DEPENDENCY_COUNTS,
            "count a job's dependencies",
        )
        .await
    }

    /// Node.js' `getDependencies`: with no list asked, every entry of all four lists; else
    /// one page per list asked, in one pipeline: `HSCAN` for processed and ignored children,
    /// `SSCAN` for unprocessed ones, `ZRANGE` for failed ones, whose cursor is an offset.
    ///
    /// Unlike Node.js, a failed page is `ZRANGE cursor cursor+count-1` (Node.js asks for
    /// `cursor count-1`, empty past the first page) and its next cursor is 0 once a page comes
    /// back short (Node.js' grows forever), as upstream's PostgreSQL backend pages.
    async fn get_dependencies(
        &self,
        job_id: &JobId,
        query: &DependenciesQuery,
    ) -> Result<Dependencies> {
        if query.lists.is_empty() {
            return self.all_dependencies(job_id).await;
        }
        let commands: Vec<Cmd> = query
            .lists
            .iter()
            .map(|&(kind, cursor, count)| self.dependency_page(job_id, kind, cursor, count))
            .collect();
        let replies = self
            .pipeline(&commands, false, "page a job's dependencies")
            .await?;
        let mut out = Dependencies::default();
        for (&(kind, cursor, count), page) in query.lists.iter().zip(&replies) {
            const WHAT: &str = "page a job's dependencies";
            match kind {
                DependencyKind::Processed => {
                    let (next, page) = reply::scan_page(WHAT, page)?;
                    out.processed = Some((reply::text_pairs(page), next));
                }
                DependencyKind::Ignored => {
                    let (next, page) = reply::scan_page(WHAT, page)?;
                    out.ignored = Some((reply::text_pairs(page), next));
                }
                DependencyKind::Unprocessed => {
                    let (next, page) = reply::scan_page(WHAT, page)?;
                    out.unprocessed = Some((reply::text_items(page), next));
                }
                DependencyKind::Failed => {
                    let keys = reply::text_items(page);
                    let next = DependenciesQuery::next_offset(cursor, count, keys.len());
                    out.failed = Some((keys, next));
                }
            }
        }
        Ok(out)
    }

    async fn get_processed_children_values(&self, job_id: &JobId) -> Result<Vec<(String, String)>> {
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(self.job_part(job_id, "processed"));
        let values = self.query(&cmd, "read processed children").await?;
        Ok(reply::text_pairs(&values))
    }

    async fn get_ignored_children_failures(&self, job_id: &JobId) -> Result<Vec<(String, String)>> {
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(self.job_part(job_id, "failed"));
        let failures = self.query(&cmd, "read ignored children failures").await?;
        Ok(reply::text_pairs(&failures))
    }

    /// `getMetrics` on `metrics:<kind>` and `metrics:<kind>:data`.
    async fn get_metrics(&self, kind: FinishedState, start: i64, end: i64) -> Result<Metrics> {
        let call = wire::get_metrics(self.keys(), kind, start, end);
        let metrics = self
            .run(call, &scripts::GET_METRICS, "read metrics")
            .await?;
        reply::metrics(&metrics)
    }

    /// `CLIENT LIST`, keeping this queue's workers (`<prefix>:<base64(queue)>`, `…:w:<name>`)
    /// and `QueueEvents` (`…:qe`): the names Node.js' `getWorkers` and `getQueueEvents` match.
    async fn get_client_list(&self) -> Result<Vec<ClientInfo>> {
        let mut cmd = redis::cmd("CLIENT");
        cmd.arg("LIST");
        let list = self.query(&cmd, "list clients").await?;
        let list = reply::text(&list).ok_or_else(|| unexpected("list clients", &list))?;
        let base = self.client_name(&ClientRole::Queue);
        let worker = format!("{base}:w:");
        let events = self.client_name(&ClientRole::QueueEvents);
        Ok(parse_client_list(&list, |name| {
            name == base || name.starts_with(&worker) || name == events
        }))
    }

    /// The `paginate` script over `<job>:processed`, `<job>:dependencies` or `<job>:failed`;
    /// `end == u64::MAX` reads to the end (Node.js' `-1`). Upstream's script pages only sets and
    /// hashes, so the failed children (a sorted set) are refused as `Error::Unsupported`.
    async fn paginate(
        &self,
        job_id: &JobId,
        kind: DependencyKind,
        start: u64,
        end: u64,
        fetch_jobs: bool,
    ) -> Result<Page> {
        if kind == DependencyKind::Failed {
            return Err(Error::Unsupported {
                operation: "paginate (failed children)",
                backend: "redis",
            });
        }
        let key = self.job_part(job_id, dependency_suffix(kind));
        let end = (end != u64::MAX).then_some(end);
        self.paginate_key(&key, start, end, fetch_jobs).await
    }

    /// `MULTI`: `LLEN wait`, `ZCARD prioritized`, `ZCOUNT delayed` up to the last score of
    /// now's millisecond, `LLEN active`, `HEXISTS meta paused`, the next
    /// [`SCALING_LOOKAHEAD`] ids of `wait` (its tail) and of `prioritized` (lowest scores),
    /// and the earliest delayed entry with its score; then one pipelined `HGET timestamp` per
    /// id read. All keys share the queue's hash tag: one node on a Cluster.
    async fn scaling_signals(&self) -> Result<ScalingSignals> {
        const WHAT: &str = "read the scaling signals";
        let k = self.keys();
        let now_ms = self.now_ms();
        let last_due_score = now_ms
            .saturating_add(1)
            .saturating_mul(1 << DELAYED_SCORE_SHIFT)
            .saturating_sub(1);
        let ahead = i64::try_from(SCALING_LOOKAHEAD).unwrap_or(i64::MAX);
        let commands = [
            redis::cmd("LLEN").arg(&k.wait).clone(),
            redis::cmd("ZCARD").arg(&k.prioritized).clone(),
            redis::cmd("ZCOUNT")
                .arg(&k.delayed)
                .arg("-inf")
                .arg(last_due_score)
                .clone(),
            redis::cmd("LLEN").arg(&k.active).clone(),
            redis::cmd("HEXISTS").arg(&k.meta).arg("paused").clone(),
            redis::cmd("LRANGE")
                .arg(&k.wait)
                .arg(-ahead)
                .arg(-1)
                .clone(),
            redis::cmd("ZRANGE")
                .arg(&k.prioritized)
                .arg(0)
                .arg(ahead - 1)
                .clone(),
            redis::cmd("ZRANGE")
                .arg(&k.delayed)
                .arg(0)
                .arg(0)
                .arg("WITHSCORES")
                .clone(),
        ];
        let replies = self.pipeline(&commands, true, WHAT).await?;
        let [
            waiting,
            prioritized,
            delayed_due,
            active,
            paused,
            wait_front,
            prioritized_front,
            earliest,
        ] = replies.as_slice()
        else {
            return Err(unexpected(WHAT, &Value::Array(replies.clone())));
        };
        let wait_front = reply::text_items(wait_front);
        let mut waiting = reply::count(waiting);
        if wait_front
            .first()
            .is_some_and(|tail| is_legacy_marker(tail))
        {
            // `LRANGE -n -1` ends with the tail: a marker left there is no job.
            waiting = waiting.saturating_sub(1);
        }
        let ids: Vec<String> = wait_front
            .into_iter()
            .filter(|id| !is_legacy_marker(id))
            .chain(reply::text_items(prioritized_front))
            .collect();
        let oldest_ready_timestamp = if ids.is_empty() {
            None
        } else {
            let reads: Vec<Cmd> = ids
                .iter()
                .map(|id| redis::cmd("HGET").arg(k.job(id)).arg("timestamp").clone())
                .collect();
            let stamps = self.pipeline(&reads, false, WHAT).await?;
            // A job finished or removed between the two reads has no timestamp any more.
            stamps
                .iter()
                .filter_map(|v| u64::try_from(reply::int(v)?).ok())
                .min()
        };
        let earliest_due = reply::scored_members(WHAT, earliest)?
            .first()
            .map(|(_, score)| score >> DELAYED_SCORE_SHIFT);
        Ok(ScalingSignals::from_observation(ScalingObservation {
            waiting,
            prioritized: reply::count(prioritized),
            delayed_due: reply::count(delayed_due),
            active: reply::count(active),
            paused: reply::count(paused) == 1,
            oldest_ready_timestamp,
            earliest_due,
            now_ms,
        }))
    }
}

#[cfg(test)]
mod tests {
    use bullmq_core::backend::Range;

    use super::{log_bounds, parse_client_list};

    #[test]
    fn newest_first_log_pages_count_from_the_tail() {
        let r = |start, end, asc| Range { start, end, asc };
        assert_eq!(log_bounds(r(0, -1, true)), (0, -1));
        assert_eq!(log_bounds(r(0, -1, false)), (0, -1));
        assert_eq!(log_bounds(r(0, 1, false)), (-2, -1));
        assert_eq!(log_bounds(r(2, 4, false)), (-5, -3));
    }

    #[test]
    fn client_list_lines_are_key_value_pairs() {
        let list = "id=3 addr=127.0.0.1:5000 name=bull:cQ==:w:a age=12 idle=0 cmd=bzpopmin\r\n\
                    id=4 addr=127.0.0.1:5001 name= age=1 idle=1\r\n";
        let clients = parse_client_list(list, |n| n.starts_with("bull:cQ=="));
        assert_eq!(clients.len(), 1);
        let c = &clients[0];
        assert_eq!(
            (c.name.as_str(), c.addr.as_str(), c.age, c.idle),
            ("bull:cQ==:w:a", "127.0.0.1:5000", Some(12), Some(0))
        );
        assert_eq!(c.raw[5], ("cmd".to_owned(), "bzpopmin".to_owned()));
    }
}
