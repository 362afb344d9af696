// Node.js side of the add-throughput benchmark: the same three modes, jobs and JSON lines as
// benches/redis_add.rs (ours) and benches/official/ (the official Rust port), with bullmq
// 6.7.6 and ioredis from tests/node. benches/compare-add.sh runs the three side by side.
//
// Modes: `sequential` (one awaited `add` at a time), `concurrent8` (8 async loops on one
// Queue and its connection), `bulk1000` (`addBulk` in chunks of 1,000, one at a time). Each
// mode runs on a fresh, unique key prefix after an unmeasured warm-up on another one; the
// job count is checked and the keys are deleted afterwards. Client CPU is
// `process.cpuUsage()` (every thread of the process, microseconds); Redis CPU is
// `used_cpu_sys + used_cpu_user` of `INFO cpu`, read before and after on a second connection.
//
// Usage: node benches/node/add.mjs [--mode NAME[,NAME]]... [--test]
//   (needs `npm ci --prefix tests/node`); env BENCH_JOBS (20000), BENCH_WARMUP (2000),
//   REDIS_URL (redis://127.0.0.1:6379).
import {
  ADD_MODES, IORedis, QUEUE, addJobs, deletePrefix, measureEach, perJob, redisCpu, require, settings, uniquePrefix,
} from './measure.mjs';

const { Queue } = require('bullmq');

const IMPL = 'bullmq-node';
const HARNESS = 'bench-add-js';

async function openQueue(url, prefix) {
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  await queue.waitUntilReady();
  return { queue, connection };
}

async function closeQueue({ queue, connection }) {
  await queue.close();
  connection.disconnect();
}

async function measure(cfg, admin, mode) {
  if (cfg.warmup > 0) {
    const prefix = uniquePrefix(HARNESS, 'warmup');
    const q = await openQueue(cfg.url, prefix);
    await addJobs(q.queue, mode, cfg.warmup);
    await closeQueue(q);
    await deletePrefix(admin, prefix);
  }
  const prefix = uniquePrefix(HARNESS, mode);
  const q = await openQueue(cfg.url, prefix);
  const redisBefore = await redisCpu(admin);
  const cpuBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  await addJobs(q.queue, mode, cfg.jobs);
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const redis = (await redisCpu(admin)) - redisBefore;
  const waiting = await admin.llen(`${prefix}:${QUEUE}:wait`);
  await closeQueue(q);
  await deletePrefix(admin, prefix);
  if (waiting !== cfg.jobs) throw new Error(`${waiting} jobs waiting, not ${cfg.jobs}`);
  const line = { impl: IMPL, mode, jobs: cfg.jobs, ...perJob(cfg.jobs, secs, cpu.user + cpu.system, redis) };
  console.log(JSON.stringify(line));
}

await measureEach(settings(ADD_MODES), measure);
