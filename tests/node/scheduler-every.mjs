#!/usr/bin/env node
// An `every` job scheduler on Node.js BullMQ 6.7.6, for tests/interop/redis_worker.rs.
//
//   MODE=upsert  on each queue of QUEUES (comma separated), upserts scheduler "sch" with
//                {every: EVERY, startDate: START} and the template {name: "tick",
//                data: {a: 1}, opts: {attempts: 2, removeOnComplete: false}}.
//   MODE=work    a Worker named "sched-w" on QUEUE returns {"tick": true} for each job and
//                closes after COUNT completions; prints {"processed": [ids…]}. Exits non-zero
//                after 20 s.
//
// Env: REDIS_URL, PREFIX, MODE, QUEUES / QUEUE, EVERY, START, COUNT.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Worker, Queue } = require('bullmq');
const IORedis = require('ioredis');

const { PREFIX, MODE } = process.env;
const connection = new IORedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});

if (MODE === 'upsert') {
  for (const name of process.env.QUEUES.split(',')) {
    const queue = new Queue(name, { connection, prefix: PREFIX });
    await queue.upsertJobScheduler(
      'sch',
      { every: Number(process.env.EVERY), startDate: Number(process.env.START) },
      { name: 'tick', data: { a: 1 }, opts: { attempts: 2, removeOnComplete: false } },
    );
    await queue.close();
  }
} else if (MODE === 'work') {
  const COUNT = Number(process.env.COUNT);
  const processed = [];
  let done;
  const finished = new Promise(resolve => (done = resolve));
  const worker = new Worker(process.env.QUEUE, async () => ({ tick: true }), {
    connection,
    prefix: PREFIX,
    name: 'sched-w',
  });
  worker.on('completed', job => {
    processed.push(job.id);
    if (processed.length >= COUNT) done();
  });
  worker.on('error', err => console.error(`worker error: ${err.message}`));
  const timeout = setTimeout(() => {
    console.error(`scheduler-every: only ${processed.length} of ${COUNT} in 20 s`);
    process.exit(1);
  }, 20_000);
  await finished;
  clearTimeout(timeout);
  await worker.close();
  console.log(JSON.stringify({ processed }));
} else {
  throw new Error(`MODE must be upsert or work, not ${MODE}`);
}
connection.disconnect();
