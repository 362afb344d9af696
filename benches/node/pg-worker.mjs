// Node.js side of the PostgreSQL worker-throughput benchmark: the same modes, jobs,
// measurement and JSON lines as benches/postgres_worker.rs (ours), with bullmq 6.7.6 on its own
// PostgreSQL backend (createPostgresBackend) and pg from tests/node. benches/compare-postgres.sh
// runs both side by side.
//
// Modes: instant-c1-keep, instant-c10-keep, instant-c100-keep by default (a processor that
// returns at once, at that concurrency, completed jobs kept); instant-c{1,10,100,500}-remove
// (removeOnComplete as a job option) and sleep10ms-c100 when named. For each, in a fresh,
// unique schema after an unmeasured warm-up in another one: the jobs are added with addBulk in
// chunks of 1,000 (not timed); a Worker is made with autorun off and waited for (not timed);
// then the clock starts, the worker runs, and every 2 ms a second connection asks whether a job
// is still waiting or active; the clock stops when none is. Client CPU is process.cpuUsage();
// PostgreSQL CPU as pg-measure.mjs explains; peak RSS as worker.mjs reads it.
//
// Usage: node benches/node/pg-worker.mjs [--mode NAME[,NAME]]... [--test]
//   (needs `npm ci --prefix tests/node`); env BENCH_JOBS (20000), BENCH_WARMUP (2000),
//   DATABASE_URL (postgres://postgres@127.0.0.1:5432/test); BENCH_COUNT_STEP=fill|work with
//   BENCH_COUNT_PREFIX=<schema> runs one step of benches/postgres-statements.sh instead.
import { setTimeout as sleep } from 'node:timers/promises';
import { CHUNK, JOB_NAME, QUEUE, data, parseArgs, resetPeakRss, settings, statusKb } from './measure.mjs';
import {
  Admin, Queue, Worker, connection, createPostgresBackend, perJob, startMeter, stopMeter, uniqueSchema,
} from './pg-measure.mjs';

const IMPL = 'bullmq-node';
const HARNESS = 'bpg_wrk_js';
const POLL_MS = 2;

const MODES = [];
for (const concurrency of [1, 10, 100, 500]) {
  for (const remove of [false, true]) {
    MODES.push({ name: `instant-c${concurrency}-${remove ? 'remove' : 'keep'}`, concurrency, remove, workMs: 0 });
  }
}
MODES.push({ name: 'sleep10ms-c100', concurrency: 100, remove: false, workMs: 10 });
const DEFAULT_MODES = ['instant-c1-keep', 'instant-c10-keep', 'instant-c100-keep'];

async function fill(schema, mode, jobs) {
  const queue = new Queue(QUEUE, { connection: connection(schema) }, createPostgresBackend);
  const opts = mode.remove ? { removeOnComplete: true } : {};
  for (let start = 0; start < jobs; start += CHUNK) {
    const chunk = [];
    for (let i = start; i < Math.min(start + CHUNK, jobs); i++) {
      chunk.push({ name: JOB_NAME, data: data(i), opts });
    }
    await queue.addBulk(chunk);
  }
  await queue.close();
}

/** Pre-fills `jobs` jobs in a fresh schema, times a worker processing them all, checks, drops. */
async function run(admin, mode, jobs, tag) {
  const schema = uniqueSchema(HARNESS, tag);
  await fill(schema, mode, jobs);
  const processor = mode.workMs > 0 ? () => sleep(mode.workMs).then(() => null) : async () => null;
  const worker = new Worker(
    QUEUE,
    processor,
    { connection: connection(schema), concurrency: mode.concurrency, autorun: false },
    createPostgresBackend,
  );
  let error;
  worker.on('error', err => {
    error = err;
  });
  await worker.waitUntilReady();
  const rssReset = resetPeakRss();
  const meter = startMeter();
  const running = worker.run();
  let rssMax = 0;
  while (await admin.unfinished(schema)) {
    if (!rssReset) rssMax = Math.max(rssMax, Math.round(process.memoryUsage().rss / 1024));
    await sleep(POLL_MS);
  }
  const usage = await stopMeter(meter, admin);
  const peakRssKb = rssReset ? statusKb('VmHWM') : rssMax;
  await worker.close();
  await running;
  const completed = await admin.count(schema, 'completed');
  const failed = await admin.count(schema, 'failed');
  await admin.dropSchema(schema);
  if (error) throw error;
  if (failed !== 0) throw new Error(`${failed} jobs failed`);
  const expected = mode.remove ? 0 : jobs;
  if (completed !== expected) throw new Error(`${completed} completed jobs kept, not ${expected}`);
  return { usage, peakRssKb };
}

/**
 * A step of benches/postgres-statements.sh (BENCH_COUNT_STEP, as our harness takes it): `fill`
 * adds the jobs to the schema BENCH_COUNT_PREFIX; `work` processes them with a worker that stops
 * once it has completed them all (no polling connection, nothing dropped), so the server's
 * statistics count the worker alone.
 */
async function countStep(step, schema, mode, jobs) {
  if (step === 'fill') return fill(schema, mode, jobs);
  let done = 0;
  let finished;
  const all = new Promise(resolve => {
    finished = resolve;
  });
  const worker = new Worker(
    QUEUE,
    async () => null,
    { connection: connection(schema), concurrency: mode.concurrency, autorun: false },
    createPostgresBackend,
  );
  worker.on('completed', () => {
    done += 1;
    if (done === jobs) finished();
  });
  await worker.waitUntilReady();
  const running = worker.run();
  await all;
  await worker.close();
  await running;
}

const cfg = settings(MODES, m => m.name);
if (parseArgs().modes.length === 0) cfg.modes = MODES.filter(m => DEFAULT_MODES.includes(m.name));
const step = process.env.BENCH_COUNT_STEP;
if (step) {
  for (const mode of cfg.modes) await countStep(step, process.env.BENCH_COUNT_PREFIX, mode, cfg.jobs);
  process.exit(0);
}
const admin = await Admin.connect();
try {
  for (const mode of cfg.modes) {
    if (cfg.warmup > 0) await run(admin, mode, cfg.warmup, 'warmup');
    const r = await run(admin, mode, cfg.jobs, mode.name);
    const line = {
      impl: IMPL,
      mode: mode.name,
      jobs: cfg.jobs,
      concurrency: mode.concurrency,
      ...perJob(cfg.jobs, r.usage),
      peak_rss_kb: r.peakRssKb,
    };
    console.log(JSON.stringify(line));
  }
} finally {
  await admin.close();
}
