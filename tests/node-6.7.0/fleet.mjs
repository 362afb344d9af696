#!/usr/bin/env node
// The Node.js BullMQ 6.7.0 services of a fleet being upgraded, for tests/interop/mixed_fleet.rs:
// a producer and workers of the previous release beside this crate (on the 6.7.6 pin), on one
// Redis prefix or one PostgreSQL schema. Prints one JSON line.
//
// Env: BACKEND (redis | postgres), REDIS_URL + PREFIX, or DATABASE_URL + SCHEMA.
// Usage: node fleet.mjs <op> [args…]
//   add <json [{queue, name, data, opts}]>   Queue#addBulk per queue, in order; prints the ids
//   flow <json tree>                         FlowProducer#add; prints {id, children: [...]}
//   work <queues csv> <ready file> <stop file>
//                                            one Worker per queue (named `node-6.7.0`,
//                                            concurrency 4); writes <ready file> once they run,
//                                            closes them once <stop file> exists; prints
//                                            {processed: [[queue, id], …], version}
//   counts <queues csv>                      prints {queue: getJobCounts(…)} as 6.7.0 reads them
// A job named `parent` returns {by, children: getChildrenValues()}, any other {by, i: data.i}.
// Exits non-zero on any error or after TIMEOUT ms (default 60 s).
import { createRequire } from 'node:module';
import { existsSync, writeFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const { Queue, Worker, FlowProducer, createPostgresBackend } = require('bullmq');
const { version } = require('bullmq/package.json');

const {
  BACKEND,
  REDIS_URL = 'redis://127.0.0.1:6379',
  PREFIX,
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test',
  SCHEMA,
  TIMEOUT = '60000',
} = process.env;
const timer = setTimeout(() => {
  console.error(`fleet ${process.argv[2]} timed out`);
  process.exit(3);
}, Number(TIMEOUT));

let redis;
const opts = (extra = {}) => {
  if (BACKEND === 'postgres') {
    return [
      { connection: { connectionString: DATABASE_URL, schema: SCHEMA, migrate: true }, ...extra },
      createPostgresBackend,
    ];
  }
  if (BACKEND !== 'redis') throw new Error(`BACKEND must be redis or postgres, not ${BACKEND}`);
  if (!redis) {
    const IORedis = require('ioredis');
    redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
  }
  return [{ connection: redis, prefix: PREFIX, ...extra }];
};
const print = value => process.stdout.write(JSON.stringify(value) + '\n');
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const idsOf = node => ({
  id: node.job.id,
  children: (node.children || []).map(idsOf),
});

const processor = async job => {
  if (job.name === 'parent') {
    return { by: `node-${version}`, children: await job.getChildrenValues() };
  }
  return { by: `node-${version}`, i: job.data.i };
};

const [op, ...args] = process.argv.slice(2);
try {
  if (op === 'add') {
    const jobs = JSON.parse(args[0]);
    const byQueue = new Map();
    for (const job of jobs) {
      if (!byQueue.has(job.queue)) byQueue.set(job.queue, []);
      byQueue.get(job.queue).push(job);
    }
    const ids = [];
    for (const [name, list] of byQueue) {
      const queue = new Queue(name, ...opts());
      const added = await queue.addBulk(
        list.map(({ name: jobName, data, opts: jobOpts }) => ({ name: jobName, data, opts: jobOpts })),
      );
      ids.push(...added.map(job => job.id));
      await queue.close();
    }
    print(ids);
  } else if (op === 'flow') {
    const producer = new FlowProducer(...opts());
    const tree = await producer.add(JSON.parse(args[0]));
    await producer.close();
    print(idsOf(tree));
  } else if (op === 'work') {
    const [queues, readyFile, stopFile] = args;
    const processed = [];
    const workers = queues.split(',').map(
      name =>
        new Worker(
          name,
          async job => {
            processed.push([name, job.id]);
            return processor(job);
          },
          ...opts({ concurrency: 4, name: 'node-6.7.0' }),
        ),
    );
    await Promise.all(workers.map(worker => worker.waitUntilReady()));
    writeFileSync(readyFile, 'ready\n');
    while (!existsSync(stopFile)) await sleep(50);
    await Promise.all(workers.map(worker => worker.close()));
    print({ processed, version });
  } else if (op === 'counts') {
    const counts = {};
    for (const name of args[0].split(',')) {
      const queue = new Queue(name, ...opts());
      counts[name] = await queue.getJobCounts(
        'waiting', 'active', 'delayed', 'prioritized', 'completed', 'failed', 'waiting-children',
      );
      await queue.close();
    }
    print(counts);
  } else {
    throw new Error(`unknown op ${op}`);
  }
} finally {
  clearTimeout(timer);
  if (redis) redis.disconnect();
}
