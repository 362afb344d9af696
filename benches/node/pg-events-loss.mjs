// How many events Node.js BullMQ 6.7.6's own QueueEvents misses on its PostgreSQL backend under
// load. Its reader reads `id > cursor`, but event ids are taken before their transactions
// commit, so they commit out of id order and a reader that has moved past a later id never
// sees an earlier one that commits after it. tests/postgres/events_load.rs runs the same load
// with our reader, which must see every event.
//
// In a fresh, unique schema: a QueueEvents (defaults: from `$`, blockingTimeout 10 s) is
// started and waited for; JOBS jobs are added with addBulk (chunks of 1,000); WORKERS Workers,
// each with its own pool, at CONCURRENCY, return at once. Once every job completed, the reader
// is given until it has seen every `completed` row of the `event` table, or until nothing new
// has come for longer than its blockingTimeout (12 s); then it prints one JSON line:
//
//   {"impl":"bullmq-node","jobs":3000,"workers":4,"concurrency":16,"in_table":3000,
//    "seen":2790,"unique":2790,"missed":210,"out_of_order":0,"secs":..}
//
// `in_table`: `completed` rows in the `event` table; `seen`: `completed` events the reader
// delivered (`unique`: distinct job ids); `missed`: job ids in the table it never delivered;
// `out_of_order`: events (of any name) delivered with an id not above the one before.
//
// Usage: node benches/node/pg-events-loss.mjs [--runs N]   (needs `npm ci --prefix tests/node`)
// Env: JOBS (3000), WORKERS (4), CONCURRENCY (16), DATABASE_URL
// (postgres://postgres@127.0.0.1:5432/test).
import { setTimeout as sleep } from 'node:timers/promises';
import { CHUNK, JOB_NAME, QUEUE, data, require } from './measure.mjs';
import { Admin, Queue, Worker, connection, createPostgresBackend, uniqueSchema } from './pg-measure.mjs';

const { QueueEvents } = require('bullmq');

const JOBS = Number(process.env.JOBS ?? 3000);
const WORKERS = Number(process.env.WORKERS ?? 4);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
const SETTLE_MS = 12000;
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 1;

async function run(admin) {
  const schema = uniqueSchema('bpg_evloss_js', 'run');
  const conn = connection(schema);
  // The table keeps every event of the run (about 4 per job; trimmed to 10,000 by default).
  const queue = new Queue(
    QUEUE, { connection: conn, streams: { events: { maxLen: 100000 } } }, createPostgresBackend,
  );
  await queue.waitUntilReady();

  const events = new QueueEvents(QUEUE, { connection: conn }, createPostgresBackend);
  const completedIds = [];
  let lastId = 0n;
  let outOfOrder = 0;
  let lastArrival = Date.now();
  // Every event, for the id order; `completed` ones also by job.
  for (const name of ['added', 'waiting', 'active', 'completed', 'failed', 'drained', 'progress']) {
    events.on(name, (args, id) => {
      const n = BigInt(id);
      if (n <= lastId) outOfOrder += 1;
      lastId = n;
      lastArrival = Date.now();
      if (name === 'completed') completedIds.push(args.jobId);
    });
  }
  let error;
  events.on('error', err => (error = err));
  await events.waitUntilReady();

  const started = process.hrtime.bigint();
  for (let start = 0; start < JOBS; start += CHUNK) {
    const chunk = [];
    for (let i = start; i < Math.min(start + CHUNK, JOBS); i++) {
      chunk.push({ name: JOB_NAME, data: data(i) });
    }
    await queue.addBulk(chunk);
  }

  let finished = 0;
  let done;
  const all = new Promise(resolve => (done = resolve));
  const workers = [];
  for (let w = 0; w < WORKERS; w++) {
    const worker = new Worker(QUEUE, async job => ({ i: job.data.i }), {
      connection: conn, concurrency: CONCURRENCY, drainDelay: 1,
    }, createPostgresBackend);
    worker.on('completed', () => ++finished >= JOBS && done());
    worker.on('failed', () => ++finished >= JOBS && done());
    worker.on('error', err => (error = err));
    workers.push(worker);
  }
  await all;
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  await Promise.all(workers.map(w => w.close()));

  const q = `"${schema}"`;
  const { rows } = await admin.client.query(
    `SELECT data->>'jobId' AS id FROM ${q}.event WHERE queue = $1 AND event = 'completed'`,
    [QUEUE],
  );
  const inTable = rows.map(r => r.id);
  // The reader's last chance: whatever it has not delivered by now it has skipped for good,
  // but a wake-up may be pending for up to its blockingTimeout.
  while (completedIds.length < inTable.length && Date.now() - lastArrival < SETTLE_MS) {
    await sleep(100);
  }
  await events.close();
  await queue.close();
  await admin.dropSchema(schema);
  if (error) throw error;

  const seen = new Set(completedIds);
  return {
    impl: 'bullmq-node',
    jobs: JOBS,
    workers: WORKERS,
    concurrency: CONCURRENCY,
    in_table: inTable.length,
    seen: completedIds.length,
    unique: seen.size,
    missed: inTable.filter(id => !seen.has(id)).length,
    out_of_order: outOfOrder,
    secs: Math.round(secs * 100) / 100,
  };
}

const admin = await Admin.connect();
try {
  for (let r = 0; r < RUNS; r++) console.log(JSON.stringify(await run(admin)));
} finally {
  await admin.close();
}
