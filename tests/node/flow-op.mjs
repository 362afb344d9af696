#!/usr/bin/env node
// Node.js BullMQ 6.7.6's FlowProducer and workers for the Rust flow tests; prints JSON.
//
// Usage: PREFIX=… node flow-op.mjs <op> [args…]
//   add <json tree> [<json queuesOptions>]   tree: {queueName, name, data, opts?, prefix?, children?}
//   addBulk <json array of trees>
//   getFlow <queue> <id> [<depth> <maxChildren> <prefix>]
//   work <comma-separated queues> <expected finished jobs>
// Trees are printed as the Rust tests build them (`norm` in test-support/src/flows/redis.rs): per
// node its qualified queue name, id, name, data, options, parent fields and return value.
// `work` runs the processor the Rust tests run: a job named `fail…` throws `boom <name>`,
// any other returns {name, children: getChildrenValues(), ignored: getIgnoredChildrenFailures()}.
import { createRequire } from 'node:module';

import { deadline, redisConnection } from './env.mjs';
import { countdown, pick } from './jobs.mjs';

const require = createRequire(import.meta.url);
const { FlowProducer, Worker } = require('bullmq');

const prefix = process.env.PREFIX;
const connection = redisConnection();
const [op, ...args] = process.argv.slice(2);

function norm(node) {
  const job = node.job;
  return {
    queue: job.queueQualifiedName,
    ...pick(job, ['id', 'name', 'data', 'opts', 'timestamp', 'parentKey', 'parent', 'returnvalue']),
    children: (node.children || []).filter(Boolean).map(norm),
  };
}

async function work(queues, expected) {
  const count = countdown(expected);
  const workers = queues.map(name => {
    const worker = new Worker(
      name,
      async job => {
        if (job.name.startsWith('fail')) throw new Error(`boom ${job.name}`);
        return {
          name: job.name,
          children: (await job.getChildrenValues()) || {},
          ignored: (await job.getIgnoredChildrenFailures()) || {},
        };
      },
      { connection, prefix, concurrency: 4 },
    );
    worker.on('completed', count.settle);
    worker.on('failed', count.settle);
    return worker;
  });
  const timeout = deadline(30_000, 2, () => `only ${count.finished} of ${expected} jobs finished`);
  await count.all;
  clearTimeout(timeout);
  await Promise.all(workers.map(w => w.close()));
  return count.finished;
}

const producer = new FlowProducer({ connection, prefix });
let out;
switch (op) {
  case 'add': {
    const opts = args[1] ? { queuesOptions: JSON.parse(args[1]) } : undefined;
    out = norm(await producer.add(JSON.parse(args[0]), opts));
    break;
  }
  case 'addBulk':
    out = (await producer.addBulk(JSON.parse(args[0]))).map(norm);
    break;
  case 'getFlow': {
    const [queueName, id, depth, maxChildren, otherPrefix] = args;
    const opts = { queueName, id };
    if (depth) opts.depth = Number(depth);
    if (maxChildren) opts.maxChildren = Number(maxChildren);
    if (otherPrefix) opts.prefix = otherPrefix;
    const tree = await producer.getFlow(opts);
    out = tree ? norm(tree) : null;
    break;
  }
  case 'work':
    out = await work(args[0].split(','), Number(args[1]));
    break;
  default:
    throw new Error(`unknown op ${op}`);
}
console.log(JSON.stringify(out));
await producer.close();
await connection.quit();
