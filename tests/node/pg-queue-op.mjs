#!/usr/bin/env node
// One Queue operation of Node.js BullMQ 6.7.6 on its PostgreSQL backend, for the Rust tests of
// bullmq-postgres. The Queue is built the way applications do it:
//   new Queue(QUEUE, { connection: { connectionString, schema, migrate } }, createPostgresBackend)
// so connecting runs upstream's own migrator (MIGRATE=1) or its schema check (otherwise).
//
// Env: DATABASE_URL, SCHEMA, QUEUE, MIGRATE ("1" to migrate while connecting), OP:
//   ready   connect only (waitUntilReady)
//   add     add one job named JOB_NAME (default "node-job") with data JOB_DATA (JSON, default {})
//
// Prints one JSON line: {"ok":true,"id":"<job id>"|null} or, when BullMQ refuses,
// {"ok":false,"error":"<error class name>","message":"..."}. Exits non-zero only on a failure
// that is not a BullMQ refusal (bad input, a crash, a timeout after 20 s).
import { createRequire } from 'node:module';

import { deadline, pgTarget } from './env.mjs';

const require = createRequire(import.meta.url);
const { Queue, createPostgresBackend } = require('bullmq');

const { QUEUE, connection } = pgTarget('pg-queue-op');
const { OP, MIGRATE, JOB_NAME = 'node-job', JOB_DATA = '{}' } = process.env;
if (!OP) {
  console.error('pg-queue-op: OP is required');
  process.exit(2);
}

const timer = deadline(20_000, 3, () => `pg-queue-op ${OP} timed out`);

const queue = new Queue(QUEUE, { connection: connection(MIGRATE === '1') }, createPostgresBackend);
// A connection error is reported through the awaited call below; keep the emitter quiet.
queue.on('error', () => {});

let result;
try {
  await queue.waitUntilReady();
  switch (OP) {
    case 'ready':
      result = { ok: true, id: null };
      break;
    case 'add': {
      const job = await queue.add(JOB_NAME, JSON.parse(JOB_DATA));
      result = { ok: true, id: job.id };
      break;
    }
    default:
      console.error(`unknown OP ${OP}`);
      process.exit(2);
  }
} catch (err) {
  if (!/^(SchemaMigrationRequiredError|SchemaVersionMismatchError|UnsupportedPostgresVersionError)$/.test(err.name)) {
    console.error(err);
    process.exit(1);
  }
  result = { ok: false, error: err.name, message: err.message };
}
await queue.close().catch(() => {});
clearTimeout(timer);
console.log(JSON.stringify(result));
