#!/usr/bin/env node
// A Node.js BullMQ 6.7.6 Worker sharing a queue with a Rust worker: returns
// {"by": "node", "i": data.i} for each job, and closes once the queue has TOTAL completed jobs.
// Prints {"processed": n}. Env: REDIS_URL, PREFIX, QUEUE, TOTAL. Exits non-zero after 90 s.
import { createRequire } from 'node:module';

import { redisConnection } from './env.mjs';

const require = createRequire(import.meta.url);
const { Worker, Queue } = require('bullmq');

const { PREFIX, QUEUE } = process.env;
const TOTAL = Number(process.env.TOTAL);
const connection = redisConnection();
let processed = 0;
const worker = new Worker(
  QUEUE,
  async job => {
    processed += 1;
    return { by: 'node', i: job.data.i };
  },
  { connection, prefix: PREFIX, concurrency: 8, name: 'node-racer' },
);
const queue = new Queue(QUEUE, { connection, prefix: PREFIX });
const deadline = Date.now() + 90_000;
for (;;) {
  const { completed } = await queue.getJobCounts('completed');
  if (completed >= TOTAL) break;
  if (Date.now() > deadline) {
    console.error(`worker-race: only ${completed} of ${TOTAL} completed in 90 s`);
    process.exit(1);
  }
  await new Promise(r => setTimeout(r, 50));
}
await worker.close();
await queue.close();
connection.disconnect();
console.log(JSON.stringify({ processed }));
