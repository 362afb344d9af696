// Node.js side of the worker-throughput benchmark: the same modes, jobs, measurement and JSON
// lines as benches/redis_worker.rs (ours) and benches/official/src/bin/worker.rs (the official
// Rust port), with bullmq 6.7.0 and ioredis from tests/node. benches/compare-worker.sh runs
// the three side by side.
//
// Modes: `instant-c{1,10,100,500}-{keep,remove}` (a processor that returns at once, at that
// concurrency, with removeOnComplete false or true as a job option) and `sleep10ms-c100` (a
// processor that sleeps 10 ms, concurrency 100). For each, on a fresh, unique key prefix after
// an unmeasured warm-up on another one: the jobs are added with addBulk in chunks of 1,000
// (not timed); a Worker is made with autorun off and waited for (not timed); then the clock
// starts, the worker runs, and every 2 ms a second connection reads LLEN of `wait` and
// `active`; the clock stops when both are 0. Client CPU is process.cpuUsage() (every thread,
// microseconds); Redis CPU is used_cpu_sys + used_cpu_user of INFO cpu, before and after;
// peak RSS is VmHWM of /proc/self/status, reset (`5` into /proc/self/clear_refs) as the clock
// starts (where that is refused: the largest process.memoryUsage().rss sampled at each poll).
//
// Usage: node benches/node/worker.mjs [--mode NAME[,NAME]]... [--test]
//   (needs `npm ci --prefix tests/node`); env BENCH_JOBS (20000), BENCH_WARMUP (2000),
//   REDIS_URL (redis://127.0.0.1:6379).
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const require = createRequire(new URL('../../tests/node/', import.meta.url));
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

const IMPL = 'bullmq-node';
const QUEUE = 'bench';
const JOB_NAME = 'bench-job';
// 100 bytes, the same in the three harnesses.
const PAYLOAD =
  'The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789abcd';
const CHUNK = 1000;
const POLL_MS = 2;

const MODES = [];
for (const concurrency of [1, 10, 100, 500]) {
  for (const remove of [false, true]) {
    MODES.push({ name: `instant-c${concurrency}-${remove ? 'remove' : 'keep'}`, concurrency, remove, workMs: 0 });
  }
}
MODES.push({ name: 'sleep10ms-c100', concurrency: 100, remove: false, workMs: 10 });

function config() {
  const args = process.argv.slice(2);
  let test = false;
  const modes = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    let list;
    if (arg === '--test') test = true;
    else if (arg === '--mode') list = args[++i];
    else if (arg.startsWith('--mode=')) list = arg.slice('--mode='.length);
    if (list === undefined) continue;
    for (const name of list.split(',')) {
      const mode = MODES.find(m => m.name === name);
      if (!mode) throw new Error(`unknown mode ${name}: ${MODES.map(m => m.name).join(', ')}`);
      modes.push(mode);
    }
  }
  const jobs = test ? 200 : Number(process.env.BENCH_JOBS ?? 20000);
  const warmup = test ? 0 : Number(process.env.BENCH_WARMUP ?? Math.min(2000, jobs));
  return {
    url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    jobs,
    warmup,
    modes: modes.length ? modes : MODES,
  };
}

/** Redis's own CPU time so far, in seconds. */
async function redisCpu(admin) {
  const info = await admin.info('cpu');
  let total = 0;
  for (const line of info.split(/\r?\n/)) {
    const m = /^used_cpu_(sys|user):([0-9.]+)$/.exec(line);
    if (m) total += Number(m[2]);
  }
  return total;
}

async function deletePrefix(admin, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) await admin.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}

/** Resets the process's peak RSS; false where refused. */
function resetPeakRss() {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

function statusKb(field) {
  const m = new RegExp(`^${field}:\\s*(\\d+) kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  if (!m) throw new Error(`${field} in /proc/self/status`);
  return Number(m[1]);
}

// Unix nanoseconds, so that the keys are as long as the Rust harnesses' ones.
const unixNanos = () => BigInt(Date.now()) * 1000000n + (process.hrtime.bigint() % 1000000n);
const uniquePrefix = tag => `bench-worker-js-${tag}-${process.pid}-${unixNanos()}`;

async function fill(url, prefix, mode, jobs) {
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  const opts = mode.remove ? { removeOnComplete: true } : {};
  for (let start = 0; start < jobs; start += CHUNK) {
    const chunk = [];
    for (let i = start; i < Math.min(start + CHUNK, jobs); i++) {
      chunk.push({ name: JOB_NAME, data: { i, payload: PAYLOAD }, opts });
    }
    await queue.addBulk(chunk);
  }
  await queue.close();
  connection.disconnect();
}

async function unfinished(admin, prefix) {
  const [[, wait], [, active]] = await admin
    .pipeline()
    .llen(`${prefix}:${QUEUE}:wait`)
    .llen(`${prefix}:${QUEUE}:active`)
    .exec();
  return wait + active;
}

/** Pre-fills `jobs` jobs under `prefix`, then times a worker processing them all. */
async function run(cfg, admin, prefix, mode, jobs) {
  await fill(cfg.url, prefix, mode, jobs);
  const connection = new IORedis(cfg.url, { maxRetriesPerRequest: null });
  const processor = mode.workMs > 0 ? () => sleep(mode.workMs).then(() => null) : async () => null;
  const worker = new Worker(QUEUE, processor, {
    connection,
    prefix,
    concurrency: mode.concurrency,
    autorun: false,
  });
  let error;
  worker.on('error', err => {
    error = err;
  });
  await worker.waitUntilReady();
  const rssReset = resetPeakRss();
  const redisBefore = await redisCpu(admin);
  const cpuBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  const running = worker.run();
  let rssMax = 0;
  while ((await unfinished(admin, prefix)) > 0) {
    if (!rssReset) rssMax = Math.max(rssMax, Math.round(process.memoryUsage().rss / 1024));
    await sleep(POLL_MS);
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const redis = (await redisCpu(admin)) - redisBefore;
  const peakRssKb = rssReset ? statusKb('VmHWM') : rssMax;
  await worker.close();
  await running;
  connection.disconnect();
  if (error) throw error;
  const [[, completed], [, failed]] = await admin
    .pipeline()
    .zcard(`${prefix}:${QUEUE}:completed`)
    .zcard(`${prefix}:${QUEUE}:failed`)
    .exec();
  if (failed !== 0) throw new Error(`${failed} jobs failed`);
  const expected = mode.remove ? 0 : jobs;
  if (completed !== expected) throw new Error(`${completed} completed jobs kept, not ${expected}`);
  return { secs, cpu: (cpu.user + cpu.system) / 1e6, redis, peakRssKb };
}

async function measure(cfg, admin, mode) {
  if (cfg.warmup > 0) {
    const prefix = uniquePrefix('warmup');
    await run(cfg, admin, prefix, mode, cfg.warmup);
    await deletePrefix(admin, prefix);
  }
  const prefix = uniquePrefix(mode.name);
  const r = await run(cfg, admin, prefix, mode, cfg.jobs);
  await deletePrefix(admin, prefix);
  const line = {
    impl: IMPL,
    mode: mode.name,
    jobs: cfg.jobs,
    concurrency: mode.concurrency,
    secs: Number(r.secs.toFixed(4)),
    jobs_per_sec: Number((cfg.jobs / r.secs).toFixed(1)),
    client_cpu_us_per_job: Number(((r.cpu * 1e6) / cfg.jobs).toFixed(3)),
    redis_cpu_us_per_job: Number(((r.redis * 1e6) / cfg.jobs).toFixed(3)),
    peak_rss_kb: r.peakRssKb,
  };
  console.log(JSON.stringify(line));
}

const cfg = config();
const admin = new IORedis(cfg.url);
try {
  for (const mode of cfg.modes) await measure(cfg, admin, mode);
} finally {
  admin.disconnect();
}
