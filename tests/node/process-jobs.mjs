#!/usr/bin/env node
// Processes the jobs of one queue with a Node.js BullMQ 6.7.6 Worker, so the Rust tests can
// read what Node stored. What the processor does depends on the job's name:
//
//   ok        returns {"double": data.i * 2} (tests/node/by-name.mjs)
//   progress  reports progress {pct: 50}, logs two lines, returns "done"
//   flaky     throws on its first two attempts, then returns {recovered: attemptsMade}
//   fail      throws Error(`boom ${data.i}`) on every attempt (retried per the job's options)
//   fatal     throws UnrecoverableError("no retry")
//
// Env: REDIS_URL, PREFIX, QUEUE, EXPECT (how many jobs must finish, completed or failed for
// good, before the worker closes). Exits non-zero on timeout (20 s) or any other error.
import { createRequire } from 'node:module';

import { deadline, redisConnection } from './env.mjs';
import { byName } from './by-name.mjs';
import { countdown } from './jobs.mjs';

const require = createRequire(import.meta.url);
const { Worker } = require('bullmq');

const { PREFIX, QUEUE } = process.env;
const EXPECT = Number(process.env.EXPECT);
const connection = redisConnection();
const count = countdown(EXPECT);

const worker = new Worker(
  QUEUE,
  job =>
    byName(job, other => {
      throw new Error(`unexpected job name ${other.name}`);
    }),
  { connection, prefix: PREFIX, concurrency: 4 },
);
worker.on('completed', count.settle);
// Only a failure with no retry left finishes the job.
worker.on('failed', count.settleFailed);

const timeout = deadline(20_000, 1, () => `process-jobs: only ${count.finished} of ${EXPECT} jobs finished in 20 s`);

await count.all;
clearTimeout(timeout);
await worker.close();
connection.disconnect();
console.log(JSON.stringify({ finished: count.finished }));
