#!/usr/bin/env node
// Runs one Node.js BullMQ 6.7.0 queue operation and prints its result as JSON, so the Rust
// tests can check that what Rust did is what Node sees, and the other way round.
//
// Usage: PREFIX=… QUEUE=… node queue-op.mjs <op> [args…]
//   isPaused | pause | resume | counts | getJob <id> | getState <id> | drain [delayed]
//   remove <id> | promote <id> | changePriority <id> <priority> | add <name> <json data> [<json opts>]
//   clean <graceMs> <limit> <type> | retryJobs <state> | getVersion | getGlobalConcurrency
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Queue, Job } = require('bullmq');
const IORedis = require('ioredis');

const [op, ...args] = process.argv.slice(2);
const connection = new IORedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});
const queue = new Queue(process.env.QUEUE, { connection, prefix: process.env.PREFIX });

async function run() {
  switch (op) {
    case 'isPaused':
      return queue.isPaused();
    case 'pause':
      return queue.pause();
    case 'resume':
      return queue.resume();
    case 'counts':
      return queue.getJobCounts();
    case 'getJob': {
      const job = await Job.fromId(queue, args[0]);
      return job ? job.asJSON() : null;
    }
    case 'getState':
      return queue.getJobState(args[0]);
    case 'drain':
      return queue.drain(args[0] === 'delayed');
    case 'remove':
      return queue.remove(args[0]);
    case 'promote': {
      const job = await Job.fromId(queue, args[0]);
      return job.promote();
    }
    case 'changePriority': {
      const job = await Job.fromId(queue, args[0]);
      return job.changePriority({ priority: Number(args[1]) });
    }
    case 'add': {
      const job = await queue.add(args[0], JSON.parse(args[1]), args[2] ? JSON.parse(args[2]) : {});
      return job.id;
    }
    case 'clean':
      return queue.clean(Number(args[0]), Number(args[1]), args[2]);
    case 'retryJobs':
      return queue.retryJobs({ state: args[0] });
    case 'getVersion':
      return queue.getVersion();
    case 'getGlobalConcurrency':
      return queue.getGlobalConcurrency();
    default:
      throw new Error(`unknown op ${op}`);
  }
}

try {
  const result = await run();
  process.stdout.write(JSON.stringify(result === undefined ? null : result) + '\n');
} finally {
  await queue.close();
  connection.disconnect();
}
