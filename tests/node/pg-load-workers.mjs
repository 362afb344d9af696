#!/usr/bin/env node
// Node.js BullMQ 6.7.6 workers on its PostgreSQL backend, for tests/postgres/events_load.rs:
// WORKERS Workers (default 4), each with its own connection pool, at CONCURRENCY (default 16)
// on queue QUEUE of schema SCHEMA, each job returning {i: data.i}. Prints {"ready": true} once
// every worker is connected, then {"completed": n, "failed": n} and exits once <expect> jobs
// completed or failed (counted from the workers' own events).
//
// Env: DATABASE_URL, SCHEMA, QUEUE, WORKERS, CONCURRENCY, TIMEOUT (ms, default 60 s).
// Usage: node pg-load-workers.mjs <expect>
// Exits non-zero on a worker error or after TIMEOUT.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Worker, createPostgresBackend } = require('bullmq');

const {
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test',
  SCHEMA,
  QUEUE,
  WORKERS = '4',
  CONCURRENCY = '16',
  TIMEOUT = '60000',
} = process.env;
const expect = Number(process.argv[2]);
if (!SCHEMA || !QUEUE || !(expect > 0)) {
  console.error('usage: SCHEMA=… QUEUE=… node pg-load-workers.mjs <expect>');
  process.exit(2);
}
const print = value => process.stdout.write(JSON.stringify(value) + '\n');
const timer = setTimeout(() => {
  console.error(`pg-load-workers timed out: ${completed} completed, ${failed} failed of ${expect}`);
  process.exit(3);
}, Number(TIMEOUT));

let completed = 0;
let failed = 0;
let done;
const finished = new Promise(resolve => (done = resolve));
const settle = () => {
  if (completed + failed >= expect) done();
};

const workers = [];
for (let n = 0; n < Number(WORKERS); n++) {
  const worker = new Worker(
    QUEUE,
    async job => ({ i: job.data.i }),
    {
      connection: { connectionString: DATABASE_URL, schema: SCHEMA, migrate: true },
      concurrency: Number(CONCURRENCY),
      name: `load-w${n}`,
      drainDelay: 1,
    },
    createPostgresBackend,
  );
  worker.on('completed', () => {
    completed += 1;
    settle();
  });
  worker.on('failed', () => {
    failed += 1;
    settle();
  });
  worker.on('error', err => {
    console.error(err);
    process.exit(1);
  });
  workers.push(worker);
}
await Promise.all(workers.map(w => w.waitUntilReady()));
print({ ready: true });
await finished;
await Promise.all(workers.map(w => w.close()));
clearTimeout(timer);
print({ completed, failed });
process.exit(0);
