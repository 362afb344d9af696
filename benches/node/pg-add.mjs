// Node.js side of the PostgreSQL add-throughput benchmark: the same three modes, jobs and JSON
// lines as benches/postgres_add.rs (ours), with bullmq 6.7.6 on its own PostgreSQL backend
// (createPostgresBackend) and pg from tests/node. benches/compare-postgres.sh runs both side
// by side.
//
// Modes: `sequential` (one awaited `add` at a time), `concurrent8` (8 async loops on one Queue
// and its pool), `bulk1000` (`addBulk` in chunks of 1,000, one at a time). Each mode runs in a
// fresh, unique schema (migrated as the Queue connects, not timed) after an unmeasured warm-up
// in another one; the job count is checked and the schema dropped afterwards. Client CPU is
// process.cpuUsage(); PostgreSQL CPU as pg-measure.mjs explains.
//
// Usage: node benches/node/pg-add.mjs [--mode NAME[,NAME]]... [--test]
//   (needs `npm ci --prefix tests/node`); env BENCH_JOBS (20000), BENCH_WARMUP (2000),
//   DATABASE_URL (postgres://postgres@127.0.0.1:5432/test).
import { ADD_MODES, QUEUE, addJobs, settings } from './measure.mjs';
import { Admin, Queue, connection, createPostgresBackend, perJob, startMeter, stopMeter, uniqueSchema } from './pg-measure.mjs';

const IMPL = 'bullmq-node';
const HARNESS = 'bpg_add_js';

/** Runs `mode` for `jobs` jobs in a fresh schema, dropped afterwards. */
async function inSchema(admin, mode, jobs, tag) {
  const schema = uniqueSchema(HARNESS, tag);
  const queue = new Queue(QUEUE, { connection: connection(schema) }, createPostgresBackend);
  await queue.waitUntilReady();
  const meter = startMeter();
  await addJobs(queue, mode, jobs);
  const usage = await stopMeter(meter, admin);
  const waiting = await admin.count(schema, 'waiting');
  await queue.close();
  await admin.dropSchema(schema);
  return { usage, waiting };
}

const cfg = settings(ADD_MODES);
const admin = await Admin.connect();
try {
  for (const mode of cfg.modes) {
    if (cfg.warmup > 0) await inSchema(admin, mode, cfg.warmup, 'warmup');
    const { usage, waiting } = await inSchema(admin, mode, cfg.jobs, mode);
    if (waiting !== cfg.jobs) throw new Error(`${waiting} jobs waiting, not ${cfg.jobs}`);
    console.log(JSON.stringify({ impl: IMPL, mode, jobs: cfg.jobs, ...perJob(cfg.jobs, usage) }));
  }
} finally {
  await admin.close();
}
