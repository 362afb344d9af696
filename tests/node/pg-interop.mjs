#!/usr/bin/env node
// Node.js BullMQ 6.7.6 on its PostgreSQL backend, for tests/interop/postgres.rs: each call runs
// one operation on queue QUEUE of schema SCHEMA and prints one JSON line (`listen` prints two).
// Every class is built the way applications build it:
//   new X(QUEUE, { connection: { connectionString, schema, migrate: true } }, createPostgresBackend)
//
// Env: DATABASE_URL, SCHEMA, QUEUE. Usage: node pg-interop.mjs <op> [args…]
//   add <json [{name, data, opts}]>        adds the jobs in order; prints their ids
//   view <json [ids]>                      prints {id: view | null} (see `view` below)
//   snapshot                               prints {counts, ids: {state: [ids]}, jobs: {id: view},
//                                          count, perPriority (0 to 3), paused} over every state
//                                          (getJobCounts, getJobs, count, getCountsPerPriority,
//                                          isPaused)
//   work <expect>                          a Worker named `interop-w`, concurrency 1, runs the
//                                          jobs (see `processor`) until <expect> jobs finished
//                                          for good; prints {finished, started: [ids]}
//   flow-add <json tree>                   FlowProducer.add; prints the tree's ids
//                                          ({id, children: [...]}) and qualified names
//   flow-work <queues csv> <expect>        one Worker per queue until <expect> jobs finished
//   upsert <id> <json repeat> <json template>
//                                          queue.upsertJobScheduler; prints the first job's id
//   sched-work <count>                     a Worker until <count> completions; prints
//                                          {processed: [ids], errors: [messages]}
//   listen <count>                         a QueueEvents from the first event: prints
//                                          {"ready": true}, then, after <count> completed or
//                                          failed events, {events: [{event, args}]} with every
//                                          added/active/progress/completed/failed event.
// Exits non-zero on any error or after TIMEOUT ms (default 30 s).
import { createRequire } from 'node:module';

import { pgTarget, deadline } from './env.mjs';
import { byName } from './by-name.mjs';
import { countdown, pick } from './jobs.mjs';

const require = createRequire(import.meta.url);
const { Queue, Worker, QueueEvents, FlowProducer, createPostgresBackend } = require('bullmq');

const { QUEUE, connection } = pgTarget('pg-interop');
const [op, ...args] = process.argv.slice(2);
const opts = (extra = {}) => ({ connection: connection(), ...extra });
const print = value =>
  process.stdout.write(JSON.stringify(value === undefined ? null : value) + '\n');
const timer = deadline(Number(process.env.TIMEOUT ?? 30_000), 3, () => `pg-interop ${op} timed out`);

const STATES = [
  'waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed', 'waiting-children',
];

// What a job does, by name (the Rust tests' processor does the same):
//   ok        returns {double: data.i * 2}
//   progress  reports progress {pct: 50}, logs two lines, returns "done"
//   flaky     throws `boom <name>` on its first two attempts, then returns {recovered: attemptsMade}
//   fail      throws `boom <data.i>` on every attempt
//   fatal     throws UnrecoverableError("no retry")
//   other     returns {name, children: getChildrenValues()}
async function processor(job) {
  return byName(job, async other => ({
    name: other.name,
    children: (await other.getChildrenValues()) || {},
  }));
}

/** A job as Node reads it back: its JSON fields, its state and its logs. */
async function view(queue, job) {
  if (!job) return null;
  const logs = await queue.getJobLogs(job.id);
  return {
    ...pick(job, [
      'id', 'name', 'data', 'opts', 'progress', 'attemptsMade', 'attemptsStarted', 'stalledCounter',
      'returnvalue', 'failedReason',
    ]),
    stacktrace: job.stacktrace ?? [],
    ...pick(job, [
      'delay', 'priority', 'timestamp', 'processedOn', 'finishedOn', 'processedBy', 'parentKey',
      'repeatJobKey',
    ]),
    state: await job.getState(),
    logs: logs.logs,
  };
}

/** Runs `worker`s until `expect` jobs finished for good (completed, or failed with no retry left). */
function untilFinished(workers, expect) {
  const count = countdown(expect);
  for (const worker of workers) {
    worker.on('completed', count.settle);
    worker.on('failed', count.settleFailed);
    worker.on('error', err => {
      console.error(err);
      process.exit(1);
    });
  }
  return count.all.then(() => count.finished);
}

function treeIds(node) {
  return {
    id: node.job.id,
    queue: node.job.queueQualifiedName,
    children: (node.children || []).map(treeIds),
  };
}

let out;
switch (op) {
  case 'add': {
    const queue = new Queue(QUEUE, opts(), createPostgresBackend);
    out = [];
    for (const { name, data, opts: jobOpts } of JSON.parse(args[0])) {
      out.push((await queue.add(name, data ?? {}, jobOpts ?? {})).id);
    }
    await queue.close();
    break;
  }
  case 'view': {
    const queue = new Queue(QUEUE, opts(), createPostgresBackend);
    out = {};
    for (const id of JSON.parse(args[0])) out[id] = await view(queue, await queue.getJob(id));
    await queue.close();
    break;
  }
  case 'snapshot': {
    const queue = new Queue(QUEUE, opts(), createPostgresBackend);
    const ids = {};
    const jobs = {};
    for (const state of STATES) {
      const list = await queue.getJobs([state]);
      ids[state] = list.map(j => j.id);
      for (const job of list) jobs[job.id] = await view(queue, job);
    }
    out = {
      counts: await queue.getJobCounts(...STATES, 'paused'),
      ids,
      jobs,
      count: await queue.count(),
      perPriority: await queue.getCountsPerPriority([0, 1, 2, 3]),
      paused: await queue.isPaused(),
    };
    await queue.close();
    break;
  }
  case 'work': {
    const started = [];
    const worker = new Worker(
      QUEUE,
      async job => {
        started.push(job.id);
        return processor(job);
      },
      opts({ name: 'interop-w', concurrency: 1, drainDelay: 1 }),
      createPostgresBackend,
    );
    const finished = await untilFinished([worker], Number(args[0]));
    await worker.close();
    out = { finished, started };
    break;
  }
  case 'flow-add': {
    const producer = new FlowProducer(opts(), createPostgresBackend);
    out = treeIds(await producer.add(JSON.parse(args[0])));
    await producer.close();
    break;
  }
  case 'flow-work': {
    const workers = args[0]
      .split(',')
      .map(
        name =>
          new Worker(name, processor, opts({ name: 'interop-w', drainDelay: 1 }), createPostgresBackend),
      );
    const finished = await untilFinished(workers, Number(args[1]));
    await Promise.all(workers.map(w => w.close()));
    out = { finished };
    break;
  }
  case 'upsert': {
    const queue = new Queue(QUEUE, opts(), createPostgresBackend);
    const job = await queue.upsertJobScheduler(args[0], JSON.parse(args[1]), JSON.parse(args[2]));
    out = { id: job ? job.id : null };
    await queue.close();
    break;
  }
  case 'sched-work': {
    const processed = [];
    const errors = [];
    let done;
    const finished = new Promise(resolve => (done = resolve));
    const worker = new Worker(
      QUEUE,
      async () => ({ tick: true }),
      opts({ name: 'sched-w', drainDelay: 1 }),
      createPostgresBackend,
    );
    worker.on('completed', job => {
      processed.push(job.id);
      if (processed.length >= Number(args[0])) done();
    });
    worker.on('error', err => errors.push(err.message));
    await finished;
    await worker.close();
    out = { processed, errors };
    break;
  }
  case 'listen': {
    const events = new QueueEvents(QUEUE, opts({ lastEventId: '0' }), createPostgresBackend);
    const seen = [];
    const count = countdown(Number(args[0]));
    for (const event of ['added', 'active', 'progress', 'completed', 'failed']) {
      events.on(event, payload => {
        seen.push({ event, args: payload });
        if (event === 'completed' || event === 'failed') count.settle();
      });
    }
    events.on('error', err => {
      console.error(err);
      process.exit(1);
    });
    await events.waitUntilReady();
    print({ ready: true });
    await count.all;
    await events.close();
    out = { events: seen };
    break;
  }
  default:
    console.error(`unknown op ${op}`);
    process.exit(2);
}
clearTimeout(timer);
print(out);
process.exit(0);
