// What the Node.js harnesses share: the pinned packages, the command line and environment,
// the modes and jobs of the add and worker benchmarks (and how they add and process them),
// the measured stretch of the worker ones, the measurements (Redis's CPU time, peak RSS,
// the per-job figures of the JSON lines) and the clean-up of a run's keys. The same figures
// as the Rust harnesses' benches/support/, read the same way.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

// bullmq 6.7.6 and ioredis as pinned by tests/node (`npm ci --prefix tests/node`).
export const require = createRequire(new URL('../../tests/node/', import.meta.url));
export const IORedis = require('ioredis');

export const QUEUE = 'bench';
export const JOB_NAME = 'bench-job';
// 100 bytes, the same in the three harnesses.
export const PAYLOAD =
  'The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789abcd';
// Jobs per addBulk call.
export const CHUNK = 1000;

/** Job number `i`'s data. */
export const data = i => ({ i, payload: PAYLOAD });

/**
 * Adds jobs `0..jobs` to `queue` with addBulk, CHUNK at a time (awaited one after another),
 * each with `opts` where given.
 */
export async function addInChunks(queue, jobs, opts) {
  for (let start = 0; start < jobs; start += CHUNK) {
    const chunk = [];
    for (let i = start; i < Math.min(start + CHUNK, jobs); i++) {
      chunk.push(opts === undefined ? { name: JOB_NAME, data: data(i) } : { name: JOB_NAME, data: data(i), opts });
    }
    await queue.addBulk(chunk);
  }
}

/**
 * The add benchmark's modes: `sequential` (one awaited `add` at a time), `concurrent8` (8
 * async loops on one Queue), `bulk1000` (addBulk in chunks of CHUNK, one at a time).
 */
export const ADD_MODES = ['sequential', 'concurrent8', 'bulk1000'];
const ADD_CONCURRENCY = 8;

/** Adds jobs `0..jobs` to `queue` as add mode `mode` does. */
export async function addJobs(queue, mode, jobs) {
  if (mode === 'sequential') {
    for (let i = 0; i < jobs; i++) await queue.add(JOB_NAME, data(i));
  } else if (mode === 'concurrent8') {
    let next = 0;
    const loop = async () => {
      for (let i = next++; i < jobs; i = next++) await queue.add(JOB_NAME, data(i));
    };
    await Promise.all(Array.from({ length: ADD_CONCURRENCY }, loop));
  } else {
    await addInChunks(queue, jobs);
  }
}

/**
 * The worker benchmark's modes: `instant-c{1,10,100,500}-{keep,remove}` (a processor that
 * returns at once, at that concurrency, with removeOnComplete false or true as a job option)
 * and `sleep10ms-c100` (a processor that sleeps 10 ms, concurrency 100).
 */
export const WORKER_MODES = [];
for (const concurrency of [1, 10, 100, 500]) {
  for (const remove of [false, true]) {
    WORKER_MODES.push({ name: `instant-c${concurrency}-${remove ? 'remove' : 'keep'}`, concurrency, remove, workMs: 0 });
  }
}
WORKER_MODES.push({ name: 'sleep10ms-c100', concurrency: 100, remove: false, workMs: 10 });

/** Worker mode `mode`'s processor: returns null at once, or after sleeping its `workMs`. */
export const processorOf = mode =>
  mode.workMs > 0 ? () => sleep(mode.workMs).then(() => null) : async () => null;

/** The job options worker mode `mode` adds its jobs with. */
export const jobOptsOf = mode => (mode.remove ? { removeOnComplete: true } : {});

/**
 * Throws unless a run ended with no failed job and `expected` completed ones kept.
 */
export function checkFinished(completed, failed, expected) {
  if (failed !== 0) throw new Error(`${failed} jobs failed`);
  if (completed !== expected) throw new Error(`${completed} completed jobs kept, not ${expected}`);
}

/** The sizes of the bench queue's keys `names` under `prefix`, each read with `command` (Redis). */
async function sizes(admin, prefix, command, names) {
  const pipeline = admin.pipeline();
  for (const name of names) pipeline[command](`${prefix}:${QUEUE}:${name}`);
  return (await pipeline.exec()).map(([err, n]) => {
    if (err) throw err;
    return n;
  });
}

/** How many jobs are in `wait` and `active` of the bench queue under `prefix` (Redis). */
export async function unfinished(admin, prefix) {
  const [wait, active] = await sizes(admin, prefix, 'llen', ['wait', 'active']);
  return wait + active;
}

/** How many jobs are kept `completed` and `failed` in the bench queue under `prefix` (Redis). */
export async function finishedCounts(admin, prefix) {
  const [completed, failed] = await sizes(admin, prefix, 'zcard', ['completed', 'failed']);
  return { completed, failed };
}

/**
 * The process's peak RSS over a measured stretch, from this call (made as the clock starts):
 * VmHWM after resetting it, or where the reset is refused, the largest RSS that `sample()`
 * (called at each poll) saw. `kb()` reads it.
 */
export function peakRss() {
  const reset = resetPeakRss();
  let max = 0;
  return {
    sample() {
      if (!reset) max = Math.max(max, Math.round(process.memoryUsage().rss / 1024));
    },
    kb: () => (reset ? statusKb('VmHWM') : max),
  };
}

/**
 * The worker harnesses' measured stretch on Redis: starts the clock, the CPU meters and the
 * peak RSS, calls `begin()` (which starts the workers), and stops them all once the bench
 * queue under `prefix` has nothing waiting or active, polled every `pollMs`. Resolves with
 * `secs`, `cpu` (process.cpuUsage over the stretch), `redis` (Redis's CPU seconds),
 * `peakRssKb` and `running` (what `begin()` returned).
 */
export async function timeUntilDrained(admin, prefix, pollMs, begin) {
  const rss = peakRss();
  const redisBefore = await redisCpu(admin);
  const cpuBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  const running = begin();
  while ((await unfinished(admin, prefix)) > 0) {
    rss.sample();
    await sleep(pollMs);
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const redis = (await redisCpu(admin)) - redisBefore;
  return { secs, cpu, redis, peakRssKb: rss.kb(), running };
}

/** REDIS_URL, else the local default. */
export const redisUrl = () => process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * The arguments: `--test` and the modes named (`--mode NAME`, `--mode=NAME`, each a
 * comma-separated list), in order.
 */
export function parseArgs() {
  const args = process.argv.slice(2);
  let test = false;
  const modes = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    let list;
    if (arg === '--test') test = true;
    else if (arg === '--mode') list = args[++i];
    else if (arg.startsWith('--mode=')) list = arg.slice('--mode='.length);
    if (list !== undefined) modes.push(...list.split(','));
  }
  return { test, modes };
}

/**
 * What the add and worker harnesses run: `modes` are every mode, `nameOf` a mode's name.
 * Jobs per mode: BENCH_JOBS (20000), 200 under --test; warm-up: BENCH_WARMUP (2000 at most),
 * none under --test.
 */
export function settings(modes, nameOf = m => m) {
  const args = parseArgs();
  const chosen = args.modes.map(name => {
    const mode = modes.find(m => nameOf(m) === name);
    if (mode === undefined) throw new Error(`unknown mode ${name}: ${modes.map(nameOf).join(', ')}`);
    return mode;
  });
  const jobs = args.test ? 200 : Number(process.env.BENCH_JOBS ?? 20000);
  const warmup = args.test ? 0 : Number(process.env.BENCH_WARMUP ?? Math.min(2000, jobs));
  return { url: redisUrl(), jobs, warmup, modes: chosen.length ? chosen : modes };
}

/** Runs `measure(cfg, admin, mode)` for each mode, on one admin connection. */
export async function measureEach(cfg, measure) {
  const admin = new IORedis(cfg.url);
  try {
    for (const mode of cfg.modes) await measure(cfg, admin, mode);
  } finally {
    admin.disconnect();
  }
}

/** Redis's own CPU time so far, in seconds. */
export async function redisCpu(admin) {
  const info = await admin.info('cpu');
  let total = 0;
  for (const line of info.split(/\r?\n/)) {
    const m = /^used_cpu_(sys|user):([0-9.]+)$/.exec(line);
    if (m) total += Number(m[2]);
  }
  return total;
}

/** Deletes every key under `prefix`. */
export async function deletePrefix(admin, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) await admin.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

// Unix nanoseconds, so that the keys are as long as the Rust harnesses' ones.
const unixNanos = () => BigInt(Date.now()) * 1000000n + (process.hrtime.bigint() % 1000000n);

/** A prefix no other run uses; `harness` (such as `bench-add-js`) tells the harnesses apart. */
export const uniquePrefix = (harness, tag) => `${harness}-${tag}-${process.pid}-${unixNanos()}`;

/** Resets the process's peak RSS; false where refused. */
export function resetPeakRss() {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

/** A kB field of /proc/self/status (VmHWM, VmRSS). */
export function statusKb(field) {
  const m = new RegExp(`^${field}:\\s*(\\d+) kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  if (!m) throw new Error(`${field} in /proc/self/status`);
  return Number(m[1]);
}

/**
 * The figures every add and worker line carries, for `jobs` jobs that took `secs` seconds,
 * `cpuUs` microseconds of this process's CPU and `redis` seconds of Redis's.
 */
export const perJob = (jobs, secs, cpuUs, redis) => ({
  secs: Number(secs.toFixed(4)),
  jobs_per_sec: Number((jobs / secs).toFixed(1)),
  client_cpu_us_per_job: Number((cpuUs / jobs).toFixed(3)),
  redis_cpu_us_per_job: Number(((redis * 1e6) / jobs).toFixed(3)),
});

/**
 * The flow and scheduler harnesses' loop: for each mode named (else each of `defaults`), an
 * unmeasured warm-up of a tenth of `count`, then the measured run, which prints its line.
 */
export async function warmThenMeasure(defaults, count, run) {
  const { modes } = parseArgs();
  for (const mode of modes.length ? modes : defaults) {
    await run(mode, Math.floor(count / 10), false);
    await run(mode, count, true);
  }
}
