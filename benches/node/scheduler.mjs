#!/usr/bin/env node
// Job scheduler upserts with Node.js BullMQ 6.7.6's queue.upsertJobScheduler: the modes of
// benches/redis_scheduler.rs (1,000 distinct schedulers upserted one awaited call at a time;
// `every` a minute, `cron` "*/5 * * * *" in Europe/London), one JSON line per mode.
// Usage: node benches/node/scheduler.mjs [--mode NAME]...
// Env: BENCH_SCHEDULERS (1000), REDIS_URL. Runs from tests/node's pinned packages.
import { randomUUID } from 'node:crypto';

import { IORedis, deletePrefix, redisUrl, require, warmThenMeasure } from './measure.mjs';

const { Queue } = require('bullmq');

const url = redisUrl();
const schedulers = Number(process.env.BENCH_SCHEDULERS || 1000);

const SCHEDULES = {
  every: { every: 60_000 },
  cron: { pattern: '*/5 * * * *', tz: 'Europe/London' },
};

async function run(mode, n, print) {
  const schedule = SCHEDULES[mode];
  if (!schedule) throw new Error(`unknown mode ${mode}`);
  const prefix = `bench-sched-${randomUUID().replaceAll('-', '')}`;
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue('bench', { connection, prefix });
  await queue.waitUntilReady();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const job = await queue.upsertJobScheduler(`sched-${i}`, schedule, {
      name: 'tick',
      data: { i, payload: 'scheduled' },
    });
    if (!job) throw new Error(`no first iteration for sched-${i}`);
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const count = await connection.zcard(`${prefix}:bench:repeat`);
  const jobs = (await connection.zcard(`${prefix}:bench:delayed`)) + (await connection.llen(`${prefix}:bench:wait`));
  if (count !== n || jobs !== n) throw new Error(`${count} schedulers, ${jobs} iterations; expected ${n}`);
  await deletePrefix(connection, prefix);
  await queue.close();
  await connection.quit();
  if (print) {
    console.log(JSON.stringify({
      impl: 'bullmq-node', mode, schedulers: n, secs, upserts_per_sec: n / secs,
    }));
  }
}

await warmThenMeasure(['every', 'cron'], schedulers, run);
