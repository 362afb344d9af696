#!/usr/bin/env node
// Node.js BullMQ 6.7.6 on a Redis Cluster (ioredis `Cluster`) or on a sentinel-managed primary
// (ioredis with `sentinels` and `name`), for the Rust cluster and sentinel tests.
//
// Usage: NODES=host:port,host:port PREFIX='{tag}' QUEUE=name node cluster-op.mjs <op> <n>
//    or: SENTINELS=host:port,host:port MASTER=name PREFIX=p QUEUE=name node cluster-op.mjs …
//   add <n>    adds n jobs named `from-node`, data {i}, and prints their ids as JSON
//   work <n>   processes jobs (returning {by: 'node', data}) until n have completed, then
//              prints the ids it completed as JSON
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Queue, Worker } = require('bullmq');
const Redis = require('ioredis');

const addresses = (list) =>
  list.split(',').map((hostPort) => {
    const [host, port] = hostPort.split(':');
    return { host, port: Number(port) };
  });
const prefix = process.env.PREFIX;
const queueName = process.env.QUEUE;
const [op, count] = process.argv.slice(2);
const n = Number(count);
const connect = () =>
  process.env.SENTINELS
    ? new Redis({
        sentinels: addresses(process.env.SENTINELS),
        name: process.env.MASTER,
        maxRetriesPerRequest: null,
      })
    : new Redis.Cluster(addresses(process.env.NODES), {
        redisOptions: { maxRetriesPerRequest: null },
      });

if (op === 'add') {
  const connection = connect();
  const queue = new Queue(queueName, { connection, prefix });
  const jobs = await queue.addBulk(
    Array.from({ length: n }, (_, i) => ({ name: 'from-node', data: { i } })),
  );
  console.log(JSON.stringify(jobs.map((j) => j.id)));
  await queue.close();
  await connection.quit();
} else if (op === 'work') {
  const connection = connect();
  const done = [];
  await new Promise((resolve, reject) => {
    const worker = new Worker(queueName, async (job) => ({ by: 'node', data: job.data }), {
      connection,
      prefix,
      concurrency: 5,
    });
    worker.on('completed', (job) => {
      done.push(job.id);
      if (done.length >= n) {
        worker.close().then(resolve, reject);
      }
    });
    worker.on('error', reject);
  });
  console.log(JSON.stringify(done));
  await connection.quit();
} else {
  throw new Error(`unknown op ${op}`);
}
