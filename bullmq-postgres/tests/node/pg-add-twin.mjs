#!/usr/bin/env node
// Adds jobs (or a job scheduler) with Node.js BullMQ 6.7.6 on its PostgreSQL backend, for the
// Rust tests of bullmq-postgres to compare the rows it writes with the rows Rust writes for the
// same input. bullmq and pg come from the workspace's pinned packages in tests/node.
//
// Env: DATABASE_URL, SCHEMA (migrated while connecting), QUEUE, OP, SPEC (JSON):
//   add        SPEC = [{name, data, opts}]: queue.add, one after the other
//   addBulk    SPEC = [{name, data, opts}]: queue.addBulk
//   flow       SPEC = a FlowJob tree ({name, queueName, data, opts, children}): FlowProducer.add
//   scheduler  SPEC = {id, repeat, template}: queue.upsertJobScheduler
//
// Prints one JSON line: {"ids": [...]} (for a flow, the tree's ids depth first; for a
// scheduler, the iteration's id). Exits non-zero on any failure, or after 20 s.
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../../tests/node/package.json', import.meta.url));
const { Queue, FlowProducer, createPostgresBackend } = require('bullmq');

const {
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test',
  SCHEMA,
  QUEUE,
  OP,
  SPEC,
} = process.env;
if (!SCHEMA || !QUEUE || !OP || !SPEC) {
  console.error('SCHEMA, QUEUE, OP and SPEC are required');
  process.exit(2);
}
const spec = JSON.parse(SPEC);

const timer = setTimeout(() => {
  console.error(`pg-add-twin ${OP} timed out`);
  process.exit(3);
}, 20_000);

const connection = { connectionString: DATABASE_URL, schema: SCHEMA, migrate: true };
const queue = new Queue(QUEUE, { connection }, createPostgresBackend);
queue.on('error', () => {});
await queue.waitUntilReady();

const treeIds = node => [node.job.id, ...(node.children ?? []).flatMap(treeIds)];

// Each OP: the ids of what it added.
const ops = {
  async add() {
    const ids = [];
    for (const { name, data, opts } of spec) {
      ids.push((await queue.add(name, data, opts)).id);
    }
    return ids;
  },
  async addBulk() {
    return (await queue.addBulk(spec)).map(job => job.id);
  },
  async flow() {
    const producer = new FlowProducer({ connection }, createPostgresBackend);
    producer.on('error', () => {});
    const ids = treeIds(await producer.add(spec));
    await producer.close();
    return ids;
  },
  async scheduler() {
    const job = await queue.upsertJobScheduler(spec.id, spec.repeat, spec.template);
    return [job?.id ?? null];
  },
};
if (!Object.hasOwn(ops, OP)) {
  console.error(`unknown OP ${OP}`);
  process.exit(2);
}
const ids = await ops[OP]();
await queue.close();
clearTimeout(timer);
console.log(JSON.stringify({ ids }));
