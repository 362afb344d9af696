#!/usr/bin/env node
// Processes the jobs of one queue with a Node.js BullMQ 6.7.6 Worker, so the Rust tests can
// read what Node stored. What the processor does depends on the job's name:
//
//   ok        returns {"double": data.i * 2}
//   progress  reports progress {pct: 50}, logs two lines, returns "done"
//   fail      throws Error(`boom ${data.i}`) on every attempt (retried per the job's options)
//   fatal     throws UnrecoverableError("no retry")
//
// Env: REDIS_URL, PREFIX, QUEUE, EXPECT (how many jobs must finish, completed or failed for
// good, before the worker closes). Exits non-zero on timeout (20 s) or any other error.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Worker, UnrecoverableError } = require('bullmq');
const IORedis = require('ioredis');

const { PREFIX, QUEUE } = process.env;
const EXPECT = Number(process.env.EXPECT);
const connection = new IORedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});

let finished = 0;
let done;
const allDone = new Promise(resolve => (done = resolve));
const settle = () => {
  finished += 1;
  if (finished >= EXPECT) done();
};

const worker = new Worker(
  QUEUE,
  async job => {
    switch (job.name) {
      case 'ok':
        return { double: job.data.i * 2 };
      case 'progress':
        await job.updateProgress({ pct: 50 });
        await job.log('first line');
        await job.log('second line');
        return 'done';
      case 'fail':
        throw new Error(`boom ${job.data.i}`);
      case 'fatal':
        throw new UnrecoverableError('no retry');
      default:
        throw new Error(`unexpected job name ${job.name}`);
    }
  },
  { connection, prefix: PREFIX, concurrency: 4 },
);
worker.on('completed', settle);
worker.on('failed', (job, err) => {
  // Only a failure with no retry left finishes the job.
  const final =
    !job ||
    job.finishedOn ||
    err?.name === 'UnrecoverableError' ||
    job.attemptsMade >= (job.opts.attempts || 1);
  if (final) settle();
});

const timeout = setTimeout(() => {
  console.error(`process-jobs: only ${finished} of ${EXPECT} jobs finished in 20 s`);
  process.exit(1);
}, 20_000);

await allDone;
clearTimeout(timeout);
await worker.close();
connection.disconnect();
console.log(JSON.stringify({ finished }));
