#!/usr/bin/env node
// Runs one Node.js BullMQ 6.7.6 queue operation and prints its result as JSON, so the Rust
// tests can check that what Rust did is what Node sees, and the other way round.
//
// Usage: PREFIX=… QUEUE=… node queue-op.mjs <op> [args…]
//   isPaused | pause | resume | counts | getJob <id> | getState <id> | drain [delayed]
//   remove <id> | promote <id> | changePriority <id> <priority> | add <name> <json data> [<json opts>]
//   clean <graceMs> <limit> <type> | retryJobs <state> | getVersion | getGlobalConcurrency
//   jobCounts [types…] | jobCountByTypes [types…] | count | countsPerPriority <p…>
//   getMetrics <type> [start end] | prometheus [<json labels>] | getWorkers | getWorkersCount
//   getRanges|getJobs <json types> <start> <end> <asc|desc> | getJobLogs <id> <start> <end> <asc|desc>
//   getDependencies <parentId> <type> <start> <end> | paginate <key suffix> <start> <end>
//   batch <json array of [op, args…]>
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Queue, Job } = require('bullmq');
const IORedis = require('ioredis');

const [op, ...args] = process.argv.slice(2);
const connection = new IORedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', {
  maxRetriesPerRequest: null,
});
const queue = new Queue(process.env.QUEUE, { connection, prefix: process.env.PREFIX });

async function run(op, args) {
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
    // Observability and getters (redis_observability_interop.rs). Objects come back as
    // [key, value] pairs so the key order Node.js produces is visible to the Rust side.
    case 'batch': {
      // A JSON array of [op, ...args] calls, answered in order, in one Node.js start.
      const results = [];
      for (const [name, ...rest] of JSON.parse(args[0])) {
        const r = await run(name, rest.map(String));
        results.push(r === undefined ? null : r);
      }
      return results;
    }
    case 'jobCounts':
      return Object.entries(await queue.getJobCounts(...args));
    case 'jobCountByTypes':
      return queue.getJobCountByTypes(...args);
    case 'count':
      return queue.count();
    case 'countsPerPriority':
      return Object.entries(await queue.getCountsPerPriority(args.map(Number)));
    case 'getMetrics':
      return queue.getMetrics(args[0], ...args.slice(1).map(Number));
    case 'prometheus':
      return queue.exportPrometheusMetrics(args[0] ? JSON.parse(args[0]) : undefined);
    case 'getWorkers':
      return (await queue.getWorkers()).map(w => w.rawname).sort();
    case 'getWorkersCount':
      return queue.getWorkersCount();
    case 'getRanges':
      return queue.getRanges(JSON.parse(args[0]), Number(args[1]), Number(args[2]), args[3] === 'asc');
    case 'getJobs':
      return (
        await queue.getJobs(JSON.parse(args[0]), Number(args[1]), Number(args[2]), args[3] === 'asc')
      ).map(j => j.id);
    case 'getJobLogs':
      return queue.getJobLogs(args[0], Number(args[1]), Number(args[2]), args[3] !== 'desc');
    case 'getDependencies': {
      const page = await queue.getDependencies(args[0], args[1], Number(args[2]), Number(args[3]));
      return { ...page, jobs: page.jobs.map(j => [j.name, j.data]) };
    }
    case 'paginate': {
      const page = await queue.getBackend().paginate(queue.toKey(args[0]), {
        start: Number(args[1]),
        end: Number(args[2]),
        fetchJobs: true,
      });
      return { ...page, jobs: page.jobs.map(j => [j.name, j.data]) };
    }
    default:
      throw new Error(`unknown op ${op}`);
  }
}

try {
  const result = await run(op, args);
  process.stdout.write(JSON.stringify(result === undefined ? null : result) + '\n');
} finally {
  await queue.close();
  connection.disconnect();
}
