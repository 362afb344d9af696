// Node.js side of the add-throughput benchmark: the same three modes, jobs and JSON lines as
// benches/redis_add.rs (ours) and benches/official/ (the official Rust port), with bullmq
// 6.7.0 and ioredis from tests/node. benches/compare-add.sh runs the three side by side.
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
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../tests/node/', import.meta.url));
const { Queue } = require('bullmq');
const IORedis = require('ioredis');

const IMPL = 'bullmq-node';
const QUEUE = 'bench';
const JOB_NAME = 'bench-job';
// 100 bytes, the same in the three harnesses.
const PAYLOAD =
  'The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. 0123456789abcd';
const CONCURRENCY = 8;
const CHUNK = 1000;
const MODES = ['sequential', 'concurrent8', 'bulk1000'];

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
    for (const m of list.split(',')) {
      if (!MODES.includes(m)) throw new Error(`unknown mode ${m}: ${MODES.join(', ')}`);
      modes.push(m);
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

const data = i => ({ i, payload: PAYLOAD });

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

// Unix nanoseconds, so that the keys are as long as the Rust harnesses' ones.
const unixNanos = () => BigInt(Date.now()) * 1000000n + (process.hrtime.bigint() % 1000000n);
const uniquePrefix = tag => `bench-add-js-${tag}-${process.pid}-${unixNanos()}`;

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

async function run(queue, mode, jobs) {
  if (mode === 'sequential') {
    for (let i = 0; i < jobs; i++) await queue.add(JOB_NAME, data(i));
  } else if (mode === 'concurrent8') {
    let next = 0;
    const loop = async () => {
      for (let i = next++; i < jobs; i = next++) await queue.add(JOB_NAME, data(i));
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  } else {
    for (let start = 0; start < jobs; start += CHUNK) {
      const chunk = [];
      for (let i = start; i < Math.min(start + CHUNK, jobs); i++) {
        chunk.push({ name: JOB_NAME, data: data(i) });
      }
      await queue.addBulk(chunk);
    }
  }
}

async function measure(cfg, admin, mode) {
  if (cfg.warmup > 0) {
    const prefix = uniquePrefix('warmup');
    const q = await openQueue(cfg.url, prefix);
    await run(q.queue, mode, cfg.warmup);
    await closeQueue(q);
    await deletePrefix(admin, prefix);
  }
  const prefix = uniquePrefix(mode);
  const q = await openQueue(cfg.url, prefix);
  const redisBefore = await redisCpu(admin);
  const cpuBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  await run(q.queue, mode, cfg.jobs);
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const redis = (await redisCpu(admin)) - redisBefore;
  const waiting = await admin.llen(`${prefix}:${QUEUE}:wait`);
  await closeQueue(q);
  await deletePrefix(admin, prefix);
  if (waiting !== cfg.jobs) throw new Error(`${waiting} jobs waiting, not ${cfg.jobs}`);
  const line = {
    impl: IMPL,
    mode,
    jobs: cfg.jobs,
    secs: Number(secs.toFixed(4)),
    jobs_per_sec: Number((cfg.jobs / secs).toFixed(1)),
    client_cpu_us_per_job: Number(((cpu.user + cpu.system) / cfg.jobs).toFixed(3)),
    redis_cpu_us_per_job: Number(((redis * 1e6) / cfg.jobs).toFixed(3)),
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
