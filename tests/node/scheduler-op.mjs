#!/usr/bin/env node
// Runs one Node.js BullMQ 6.7.6 job-scheduler operation and prints its result as JSON, for the
// Rust scheduler's interop tests.
//
// Usage: PREFIX=… QUEUE=… node scheduler-op.mjs <op> [args…]
//   upsert <id> <json repeatOpts> [<json template>]  -> {id, delay, opts} of the first job, or null
//   get <id> | list <start> <end> <asc|desc> | count | remove <id>
//   jobHash <jobId>                                   -> the job hash as stored
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Queue } = require('bullmq');
const IORedis = require('ioredis');

const [op, ...args] = process.argv.slice(2);
const connection = new IORedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});
const prefix = process.env.PREFIX;
const queue = new Queue(process.env.QUEUE, { connection, prefix });

async function run() {
  switch (op) {
    case 'upsert': {
      const job = await queue.upsertJobScheduler(
        args[0],
        JSON.parse(args[1]),
        args[2] ? JSON.parse(args[2]) : undefined,
      );
      return job ? { id: job.id, delay: job.delay, opts: job.opts } : null;
    }
    case 'get':
      return (await queue.getJobScheduler(args[0])) ?? null;
    case 'list':
      return queue.getJobSchedulers(Number(args[0]), Number(args[1]), args[2] === 'asc');
    case 'count':
      return queue.getJobSchedulersCount();
    case 'remove':
      return queue.removeJobScheduler(args[0]);
    case 'jobHash':
      return connection.hgetall(`${prefix}:${process.env.QUEUE}:${args[0]}`);
    default:
      throw new Error(`unknown op ${op}`);
  }
}

try {
  process.stdout.write(JSON.stringify(await run()) + '\n');
} finally {
  await queue.close();
  connection.disconnect();
}
