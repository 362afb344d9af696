// Node.js side of the relay benchmark: the same measurement and JSON line as
// benches/relay.rs, with bullmq 6.7.6's Relay from tests/node. One publisher and N subscribing
// nodes in one process, each with one subscription matching every message; published one at a
// time; latency from just before the publish call to the listener (one clock).
//
// Usage: node benches/node/relay.mjs [--store redis|postgres] [--nodes 1,10,100]
//   [--messages N] [--test] (needs `npm ci --prefix tests/node`); env REDIS_URL, DATABASE_URL.
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';

const require = createRequire(new URL('../../tests/node/package.json', import.meta.url));
const { Relay, createPostgresRelayBackend } = require('bullmq');
const IORedis = require('ioredis');

const argv = process.argv.slice(2);
const arg = name => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const smoke = argv.includes('--test');
const store = arg('--store') ?? 'redis';
const nodes = smoke ? [1, 2] : (arg('--nodes') ?? '1,10,100').split(',').map(Number);
const messages = smoke ? 50 : Number(arg('--messages') ?? 2000);
const stamp = process.pid;

function options(ns, redis) {
  const opts = { namespace: ns, blockTimeout: 1000 };
  if (store === 'postgres') {
    opts.connection = {
      connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      migrate: true,
    };
    opts.backend = createPostgresRelayBackend;
  } else {
    opts.connection = redis;
    opts.prefix = `bench-relay-node-${stamp}`;
  }
  return opts;
}

const percentile = (sorted, p) =>
  sorted.length ? sorted[Math.round((sorted.length - 1) * p)] : 0;

async function run(n) {
  const redis =
    store === 'redis'
      ? new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null })
      : undefined;
  const ns = store === 'postgres' ? `benchnode${stamp}n${n}` : `n${n}`;
  const sent = new Array(messages);
  const latencies = [];
  let last = 0;
  const subscribers = [];
  for (let i = 0; i < n; i++) {
    const relay = new Relay(options(ns, redis));
    await relay.waitUntilReady();
    await relay.subscribe('bench.>', m => {
      const now = performance.now();
      if (sent[m.data] !== undefined) latencies.push(now - sent[m.data]);
      last = now;
    });
    subscribers.push(relay);
  }
  const publisher = new Relay(options(ns, redis));
  await publisher.waitUntilReady();
  const start = performance.now();
  for (let i = 0; i < messages; i++) {
    sent[i] = performance.now();
    await publisher.publish('bench.topic.x', i);
  }
  const published = performance.now() - start;
  const deadline = performance.now() + 120000;
  while (latencies.length < messages * n && performance.now() < deadline) await sleep(5);
  latencies.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      impl: 'bullmq-node',
      store,
      nodes: n,
      messages,
      delivered: latencies.length,
      publish_per_sec: Math.round(messages / (published / 1000)),
      deliveries_per_sec: Math.round(latencies.length / ((last - start) / 1000)),
      p50_ms: Math.round(percentile(latencies, 0.5) * 100) / 100,
      p99_ms: Math.round(percentile(latencies, 0.99) * 100) / 100,
    }),
  );
  await publisher.close();
  for (const relay of subscribers) await relay.close();
  if (redis) await redis.quit();
}

for (const n of nodes) await run(n);
