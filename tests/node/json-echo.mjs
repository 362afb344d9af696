#!/usr/bin/env node
// Node.js BullMQ 6.7.6's side of the JSON interop test (tests/interop/json.rs): jobs whose data
// stress JSON (integer-like keys, nested objects, floats JavaScript writes in its own way,
// unicode, null data) added by Node, and processed by Node's echo worker, on Redis or on
// PostgreSQL.
//
// Env: BACKEND (redis | postgres), QUEUE, OP, EXTRA_IDS (ids of jobs added by the test itself,
// comma-separated, worked and viewed with the corpus), and PREFIX + REDIS_URL (redis) or
// SCHEMA + DATABASE_URL (postgres). OP:
//   add    adds the corpus, job ids e0, e1, …; prints the ids
//   work   runs the echo worker until every corpus job completed (20 s at most); the
//          processor returns {"echo": job.data, "seen": JSON.stringify(job.data)}
//   view   prints, per job id, JSON.stringify of job.data and job.returnvalue as
//          Job.fromId reads them (Node's getters' view)
// Prints one JSON line.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Queue, Worker, Job, createPostgresBackend } = require('bullmq');
const IORedis = require('ioredis');

const { BACKEND, QUEUE, OP, PREFIX, SCHEMA } = process.env;

const corpus = [
  { b: 1, 10: 'ten', a: 2, 9: 'nine', 0: 'zero', '01': 'not an index', 4294967295: 'too big' },
  { nested: { z: [1, { y: 2, 3: 'x' }], 2: { k: 'v', 1: 1 } }, list: [{ b: 1, a: 2 }] },
  { big: 1e20, tiny: 1e-7, sum: 0.1 + 0.2, huge: 1e21, neg: -0, half: 0.5, max: Number.MAX_VALUE },
  { min: 5e-324, safe: 2 ** 53 + 2, micro: 1e-6, third: 1 / 3, int: 1e15, exp: 123e-20 },
  { text: 'caf\u00e9 \u65e5\u672c \u{1f600}', quote: 'a "q" \\ /', ctl: '\u0001\n\t', '\u00e9': 1 },
  null,
  [3, 1e20, { b: 1, 1: 2 }],
  'a string',
  12.5,
  {},
];

function connectionOpts(extra = {}) {
  if (BACKEND === 'postgres') {
    const connectionString = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
    return { connection: { connectionString, schema: SCHEMA, migrate: true }, ...extra };
  }
  const connection = new IORedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', {
    maxRetriesPerRequest: null,
  });
  return { connection, prefix: PREFIX, ...extra };
}
const factory = BACKEND === 'postgres' ? createPostgresBackend : undefined;

const timer = setTimeout(() => {
  console.error(`json-echo ${OP} timed out`);
  process.exit(3);
}, 20_000);

const corpusIds = corpus.map((_, i) => `e${i}`);
const ids = [...corpusIds, ...(process.env.EXTRA_IDS || '').split(',').filter(Boolean)];
const queue = new Queue(QUEUE, connectionOpts(), factory);
let out;
switch (OP) {
  case 'add':
    for (const [i, data] of corpus.entries()) {
      await queue.add('echo', data, { jobId: corpusIds[i] });
    }
    out = corpusIds;
    break;
  case 'work': {
    let completed = 0;
    let done;
    const allDone = new Promise(resolve => (done = resolve));
    const worker = new Worker(
      QUEUE,
      async job => ({ echo: job.data, seen: JSON.stringify(job.data) }),
      connectionOpts({ name: 'echo-w', concurrency: 1 }),
      factory,
    );
    worker.on('completed', () => {
      completed += 1;
      if (completed === ids.length) done();
    });
    worker.on('failed', (job, err) => {
      console.error(`job ${job?.id} failed: ${err.message}`);
      process.exit(1);
    });
    await allDone;
    await worker.close();
    out = completed;
    break;
  }
  case 'view': {
    out = {};
    for (const id of ids) {
      const job = await Job.fromId(queue, id);
      out[id] = { data: JSON.stringify(job.data), returnvalue: JSON.stringify(job.returnvalue) };
    }
    break;
  }
  default:
    console.error(`unknown OP ${OP}`);
    process.exit(2);
}
await queue.close();
clearTimeout(timer);
console.log(JSON.stringify(out));
process.exit(0);
