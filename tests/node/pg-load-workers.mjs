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

import { deadline, pgTarget } from './env.mjs';
import { countdown } from './jobs.mjs';

const require = createRequire(import.meta.url);
const { Worker, createPostgresBackend } = require('bullmq');

const { QUEUE, connection } = pgTarget('pg-load-workers');
const { WORKERS = '4', CONCURRENCY = '16', TIMEOUT = '60000' } = process.env;
const expect = Number(process.argv[2]);
if (!(expect > 0)) {
  console.error('usage: SCHEMA=… QUEUE=… node pg-load-workers.mjs <expect>');
  process.exit(2);
}
const print = value => process.stdout.write(JSON.stringify(value) + '\n');
const timer = deadline(
  Number(TIMEOUT),
  3,
  () => `pg-load-workers timed out: ${completed} completed, ${failed} failed of ${expect}`,
);

// Counted apart for the report; together they finish the run.
let completed = 0;
let failed = 0;
const count = countdown(expect);

const workers = [];
for (let n = 0; n < Number(WORKERS); n++) {
  const worker = new Worker(
    QUEUE,
    async job => ({ i: job.data.i }),
    {
      connection: connection(),
      concurrency: Number(CONCURRENCY),
      name: `load-w${n}`,
      drainDelay: 1,
    },
    createPostgresBackend,
  );
  worker.on('completed', () => {
    completed += 1;
    count.settle();
  });
  worker.on('failed', () => {
    failed += 1;
    count.settle();
  });
  worker.on('error', err => {
    console.error(err);
    process.exit(1);
  });
  workers.push(worker);
}
await Promise.all(workers.map(w => w.waitUntilReady()));
print({ ready: true });
await count.all;
await Promise.all(workers.map(w => w.close()));
clearTimeout(timer);
print({ completed, failed });
process.exit(0);
