#!/usr/bin/env node
// The job-option corpus (opts-corpus.mjs) processed by workers, so that a Rust worker and a
// Node.js BullMQ 6.7.6 worker can be compared job by job (tests/interop/redis_worker.rs).
//
//   MODE=add   for each side of SIDES (comma separated), adds corpus case i to the queue
//              `<side><i>` (one queue per case, so that no case's retention trims another's
//              job), job name = case name, data = {i, behaviour}; prints
//              {"<side>": {"<case>": ["<queue>", "<id>"]}}. Parent cases get the stand-in
//              parent hash opts-golden.mjs also uses.
//   MODE=work  runs a Worker named "corpus-w" on each queue `<SIDE><i>` until stdin closes,
//              then closes them and prints {"closed": true}.
//
// The behaviour of a job (the Rust test's processor does the same for the same behaviour):
//   ok        returns {"case": name, "i": data.i}
//   progress  updateProgress({pct: 50}), logs "first line" and "second line", returns "done"
//   flaky     throws Error(`boom ${name}`) while attemptsMade < 2, then returns
//             {"recovered": attemptsMade}
//   fatal     throws UnrecoverableError("no retry")
//   fail      throws Error("always")
// Custom backoff strategies (any type that is not built in) wait 200 ms.
//
// Env: REDIS_URL, PREFIX (also the corpus's GOLDEN_PREFIX, so parents live under it), MODE,
// SIDES / SIDE.
import { createRequire } from 'node:module';

import { redisConnection } from './env.mjs';
import { progress, flaky, fatal } from './jobs.mjs';

const require = createRequire(import.meta.url);
const { Worker, Queue } = require('bullmq');

process.env.GOLDEN_PREFIX = process.env.PREFIX;
const { corpus, writeParent } = await import('./opts-corpus.mjs');

const { PREFIX, MODE } = process.env;
const connection = redisConnection();

/** Bounded behaviours for the option sets whose attempts or backoff matter. */
export function behaviourOf(name, i) {
  if (name.startsWith('backoff') || name.startsWith('attempts') || name.startsWith('combo')) {
    return 'flaky';
  }
  return ['ok', 'progress', 'fatal', 'fail', 'ok', 'flaky'][i % 6];
}

async function add() {
  await writeParent(connection);
  const out = {};
  for (const side of process.env.SIDES.split(',')) {
    out[side] = {};
    for (const [i, c] of corpus.entries()) {
      const queue = new Queue(`${side}${i}`, { connection, prefix: PREFIX });
      const job = await queue.add(c.name, { i, behaviour: behaviourOf(c.name, i) }, c.opts);
      out[side][c.name] = [`${side}${i}`, job.id];
      await queue.close();
    }
  }
  console.log(JSON.stringify(out));
}

async function processor(job) {
  switch (job.data.behaviour) {
    case 'ok':
      return { case: job.name, i: job.data.i };
    case 'progress':
      return progress(job);
    case 'flaky':
      return flaky(job);
    case 'fatal':
      return fatal();
    case 'fail':
      throw new Error('always');
    default:
      throw new Error(`unexpected behaviour ${job.data.behaviour}`);
  }
}

async function work() {
  const workers = corpus.map(
    (_, i) =>
      new Worker(`${process.env.SIDE}${i}`, processor, {
        connection,
        prefix: PREFIX,
        name: 'corpus-w',
        drainDelay: 1,
        settings: { backoffStrategy: () => 200 },
      }),
  );
  for (const worker of workers) {
    worker.on('error', err => console.error(`worker error: ${err.message}`));
  }
  await Promise.all(workers.map(w => w.waitUntilReady()));
  process.stdin.resume();
  await new Promise(resolve => process.stdin.on('end', resolve));
  await Promise.all(workers.map(w => w.close()));
  console.log(JSON.stringify({ closed: true }));
}

if (MODE === 'add') await add();
else if (MODE === 'work') await work();
else throw new Error(`MODE must be add or work, not ${MODE}`);
connection.disconnect();
