// Node.js side of the worker-throughput benchmark: the same modes, jobs, measurement and JSON
// lines as benches/redis_worker.rs (ours) and benches/official/src/bin/worker.rs (the official
// Rust port), with bullmq 6.7.6 and ioredis from tests/node. benches/compare-worker.sh runs
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
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CHUNK, IORedis, JOB_NAME, QUEUE, data, deletePrefix, measureEach, perJob, redisCpu, require, resetPeakRss,
  settings, statusKb, uniquePrefix,
} from './measure.mjs';

const { Queue, Worker } = require('bullmq');

const IMPL = 'bullmq-node';
const HARNESS = 'bench-worker-js';
const POLL_MS = 2;

const MODES = [];
for (const concurrency of [1, 10, 100, 500]) {
  for (const remove of [false, true]) {
    MODES.push({ name: `instant-c${concurrency}-${remove ? 'remove' : 'keep'}`, concurrency, remove, workMs: 0 });
  }
}
MODES.push({ name: 'sleep10ms-c100', concurrency: 100, remove: false, workMs: 10 });

async function fill(url, prefix, mode, jobs) {
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  const opts = mode.remove ? { removeOnComplete: true } : {};
  for (let start = 0; start < jobs; start += CHUNK) {
    const chunk = [];
    for (let i = start; i < Math.min(start + CHUNK, jobs); i++) {
      chunk.push({ name: JOB_NAME, data: data(i), opts });
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
    const prefix = uniquePrefix(HARNESS, 'warmup');
    await run(cfg, admin, prefix, mode, cfg.warmup);
    await deletePrefix(admin, prefix);
  }
  const prefix = uniquePrefix(HARNESS, mode.name);
  const r = await run(cfg, admin, prefix, mode, cfg.jobs);
  await deletePrefix(admin, prefix);
  const line = {
    impl: IMPL,
    mode: mode.name,
    jobs: cfg.jobs,
    concurrency: mode.concurrency,
    ...perJob(cfg.jobs, r.secs, r.cpu * 1e6, r.redis),
    peak_rss_kb: r.peakRssKb,
  };
  console.log(JSON.stringify(line));
}

await measureEach(settings(MODES, m => m.name), measure);
