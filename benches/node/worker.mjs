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
import {
  IORedis, QUEUE, WORKER_MODES, addInChunks, checkFinished, deletePrefix, finishedCounts, jobOptsOf, measureEach,
  perJob, processorOf, require, settings, timeUntilDrained, uniquePrefix,
} from './measure.mjs';

const { Queue, Worker } = require('bullmq');

const IMPL = 'bullmq-node';
const HARNESS = 'bench-worker-js';
const POLL_MS = 2;

async function fill(url, prefix, mode, jobs) {
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  await addInChunks(queue, jobs, jobOptsOf(mode));
  await queue.close();
  connection.disconnect();
}

/** Pre-fills `jobs` jobs under `prefix`, then times a worker processing them all. */
async function run(cfg, admin, prefix, mode, jobs) {
  await fill(cfg.url, prefix, mode, jobs);
  const connection = new IORedis(cfg.url, { maxRetriesPerRequest: null });
  const worker = new Worker(QUEUE, processorOf(mode), {
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
  const { secs, cpu, redis, peakRssKb, running } = await timeUntilDrained(admin, prefix, POLL_MS, () =>
    worker.run(),
  );
  await worker.close();
  await running;
  connection.disconnect();
  if (error) throw error;
  const { completed, failed } = await finishedCounts(admin, prefix);
  checkFinished(completed, failed, mode.remove ? 0 : jobs);
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

await measureEach(settings(WORKER_MODES, m => m.name), measure);
