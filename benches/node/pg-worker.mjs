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
import {
  QUEUE, WORKER_MODES, addInChunks, checkFinished, jobOptsOf, parseArgs, peakRss, processorOf, settings,
} from './measure.mjs';
import {
  Admin, Queue, Worker, connection, createPostgresBackend, perJob, startMeter, stopMeter, uniqueSchema,
} from './pg-measure.mjs';

const IMPL = 'bullmq-node';
const HARNESS = 'bpg_wrk_js';
const POLL_MS = 2;
const DEFAULT_MODES = ['instant-c1-keep', 'instant-c10-keep', 'instant-c100-keep'];

async function fill(schema, mode, jobs) {
  const queue = new Queue(QUEUE, { connection: connection(schema) }, createPostgresBackend);
  await addInChunks(queue, jobs, jobOptsOf(mode));
  await queue.close();
}

/** Pre-fills `jobs` jobs in a fresh schema, times a worker processing them all, checks, drops. */
async function run(admin, mode, jobs, tag) {
  const schema = uniqueSchema(HARNESS, tag);
  await fill(schema, mode, jobs);
  const worker = new Worker(
    QUEUE,
    processorOf(mode),
    { connection: connection(schema), concurrency: mode.concurrency, autorun: false },
    createPostgresBackend,
  );
  let error;
  worker.on('error', err => {
    error = err;
  });
  await worker.waitUntilReady();
  const rss = peakRss();
  const meter = startMeter();
  const running = worker.run();
  while (await admin.unfinished(schema)) {
    rss.sample();
    await sleep(POLL_MS);
  }
  const usage = await stopMeter(meter, admin);
  const peakRssKb = rss.kb();
  await worker.close();
  await running;
  const completed = await admin.count(schema, 'completed');
  const failed = await admin.count(schema, 'failed');
  await admin.dropSchema(schema);
  if (error) throw error;
  checkFinished(completed, failed, mode.remove ? 0 : jobs);
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

const cfg = settings(WORKER_MODES, m => m.name);
if (parseArgs().modes.length === 0) cfg.modes = WORKER_MODES.filter(m => DEFAULT_MODES.includes(m.name));
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
