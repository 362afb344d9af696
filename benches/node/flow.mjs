#!/usr/bin/env node
// Flow creation with Node.js BullMQ 6.7.6's FlowProducer: the modes of benches/redis_flow.rs
// (1,000 flows of a parent with 10 children; `sequential` awaited adds, `bulk100` addBulk of
// 100 trees), one JSON line per mode. Usage: node benches/node/flow.mjs [--mode NAME]...
// Env: BENCH_FLOWS (1000), REDIS_URL. Runs from tests/node's pinned packages.
import { randomUUID } from 'node:crypto';

import { IORedis, deletePrefix, redisUrl, require, warmThenMeasure } from './measure.mjs';

const { FlowProducer } = require('bullmq');

const CHILDREN = 10;
const BULK = 100;
const url = redisUrl();
const flows = Number(process.env.BENCH_FLOWS || 1000);

const tree = i => ({
  queueName: 'bench-parents',
  name: 'parent',
  data: { i, payload: 'parent job' },
  children: Array.from({ length: CHILDREN }, (_, c) => ({
    queueName: 'bench-children',
    name: 'child',
    data: { i, c },
  })),
});

async function run(mode, n, print) {
  const prefix = `bench-flow-${randomUUID().replaceAll('-', '')}`;
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const producer = new FlowProducer({ connection, prefix });
  await producer.waitUntilReady();
  const start = process.hrtime.bigint();
  if (mode === 'sequential') {
    for (let i = 0; i < n; i++) await producer.add(tree(i));
  } else if (mode === 'bulk100') {
    for (let i = 0; i < n; i += BULK) {
      const trees = [];
      for (let j = i; j < Math.min(n, i + BULK); j++) trees.push(tree(j));
      await producer.addBulk(trees);
    }
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const waiting = await connection.llen(`${prefix}:bench-children:wait`);
  if (waiting !== n * CHILDREN) throw new Error(`${waiting} children, expected ${n * CHILDREN}`);
  await deletePrefix(connection, prefix);
  await producer.close();
  await connection.quit();
  if (print) {
    console.log(JSON.stringify({
      impl: 'bullmq-node', mode, flows: n, jobs: n * (CHILDREN + 1), secs, flows_per_sec: n / secs,
    }));
  }
}

await warmThenMeasure(['sequential', 'bulk100'], flows, run);
