// The environment the scripts share, with the tests' servers as defaults: a Redis connection
// for BullMQ, the PostgreSQL schema and queue a script works on, and a deadline.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const IORedis = require('ioredis');

/** An ioredis connection to REDIS_URL (default redis://127.0.0.1:6379), as workers need it. */
export function redisConnection() {
  return new IORedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', {
    maxRetriesPerRequest: null,
  });
}

/**
 * SCHEMA and QUEUE, which `script` cannot do without (it exits 2 naming them), and
 * `connection(migrate = true)`: the `connection` option on DATABASE_URL (default the tests'
 * server) in SCHEMA that every class is built with.
 */
export function pgTarget(script) {
  const { DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test', SCHEMA, QUEUE } = process.env;
  if (!SCHEMA || !QUEUE) {
    console.error(`${script}: SCHEMA and QUEUE are required`);
    process.exit(2);
  }
  const connection = (migrate = true) => ({ connectionString: DATABASE_URL, schema: SCHEMA, migrate });
  return { SCHEMA, QUEUE, connection };
}

/** Exits with `code` after `ms` ms, printing `message()`, unless cleared with clearTimeout first. */
export function deadline(ms, code, message) {
  return setTimeout(() => {
    console.error(message());
    process.exit(code);
  }, ms);
}
