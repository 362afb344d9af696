#!/usr/bin/env node
// Job schedulers (cron `pattern` and `every`) on Node.js BullMQ 6.7.6, for
// tests/interop/redis_scheduler.rs.
//
//   MODE=upsert  upserts scheduler ID with the repeat options REPEAT (JSON) and the template
//                TEMPLATE (JSON; none when unset) on each queue of QUEUES (comma separated),
//                TIMES times in a row (default 1); prints [{queue, id}] with the first job of
//                the last upsert.
//   MODE=work    WORKERS workers (default 1) named NAME on QUEUE return {"tick": true} for each
//                job; they close after COUNT completions in all, or at UNTIL (Unix ms);
//                prints {"processed": [ids…], "errors": [messages…]}. Exits non-zero after
//                TIMEOUT ms (default 25 s).
//
// Env: REDIS_URL, PREFIX, MODE, QUEUES / QUEUE, ID, REPEAT, TEMPLATE, TIMES, WORKERS, NAME,
// COUNT, UNTIL, TIMEOUT.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Worker, Queue } = require('bullmq');
const IORedis = require('ioredis');

const env = process.env;
const { PREFIX, MODE } = env;
const url = env.REDIS_URL || 'redis://127.0.0.1:6379';
const connection = new IORedis(url, { maxRetriesPerRequest: null });

if (MODE === 'upsert') {
  const out = [];
  for (const name of env.QUEUES.split(',')) {
    const queue = new Queue(name, { connection, prefix: PREFIX });
    let job;
    for (let i = 0; i < Number(env.TIMES || 1); i++) {
      const template = env.TEMPLATE ? JSON.parse(env.TEMPLATE) : undefined;
      job = await queue.upsertJobScheduler(env.ID, JSON.parse(env.REPEAT), template);
    }
    out.push({ queue: name, id: job ? job.id : null });
    await queue.close();
  }
  console.log(JSON.stringify(out));
} else if (MODE === 'work') {
  const count = env.COUNT ? Number(env.COUNT) : Infinity;
  const processed = [];
  const errors = [];
  let done;
  const finished = new Promise(resolve => (done = resolve));
  const workers = [];
  for (let i = 0; i < Number(env.WORKERS || 1); i++) {
    // Each worker on its own connection, as separate processes would be.
    const worker = new Worker(env.QUEUE, async () => ({ tick: true }), {
      connection: new IORedis(url, { maxRetriesPerRequest: null }),
      prefix: PREFIX,
      name: env.NAME || 'sched-w',
    });
    worker.on('completed', job => {
      processed.push(job.id);
      if (processed.length >= count) done();
    });
    worker.on('error', err => errors.push(err.message));
    workers.push(worker);
  }
  await Promise.all(workers.map(w => w.waitUntilReady()));
  if (env.UNTIL) setTimeout(done, Math.max(0, Number(env.UNTIL) - Date.now()));
  const timeout = setTimeout(() => {
    console.error(`scheduler-interop: ${processed.length} completions, then timed out`);
    process.exit(1);
  }, Number(env.TIMEOUT || 25_000));
  await finished;
  clearTimeout(timeout);
  await Promise.all(workers.map(w => w.close()));
  console.log(JSON.stringify({ processed, errors }));
  process.exit(0);
} else {
  throw new Error(`MODE must be upsert or work, not ${MODE}`);
}
connection.disconnect();
