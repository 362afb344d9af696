#!/usr/bin/env node
// One node of Node.js BullMQ 6.7.6's Relay, for the Rust relay interop tests.
//
// Env: STORE ("redis" or "postgres"), REDIS_URL + PREFIX (Redis), DATABASE_URL + SCHEMA
// (PostgreSQL), NAMESPACE, OP:
//   publish    publish DATA (JSON) on TOPIC, retained for RETAIN ms (default 0); prints
//              {"mid","nodes","endpoints"}
//   subscribe  subscribe to PATTERN; prints {"ready":true,"nodeId"} once subscribed, then one
//              {"topic","mid","ts","data","retained"} line per message (data as
//              JSON.stringify writes it) until COUNT messages came; then reads stdin: a
//              line "getters" prints {"getters":{counts,patterns,subscriptions,retained,
//              nodes}}, any other line (or the end of stdin) closes
//   getters    prints the getters line only
// Exits non-zero on a failure (or after 30 s).
import { createRequire } from 'node:module';
import readline from 'node:readline';

const require = createRequire(import.meta.url);
const { Relay, createPostgresRelayBackend } = require('bullmq');
const IORedis = require('ioredis');

const env = process.env;
const timer = setTimeout(() => {
  console.error('relay-op: timed out');
  process.exit(3);
}, 30000);

let redis;
const opts = { namespace: env.NAMESPACE, name: 'node-relay', blockTimeout: 500 };
if (env.STORE === 'postgres') {
  opts.connection = { connectionString: env.DATABASE_URL, schema: env.SCHEMA };
  opts.backend = createPostgresRelayBackend;
} else {
  redis = new IORedis(env.REDIS_URL, { maxRetriesPerRequest: null });
  opts.connection = redis;
  opts.prefix = env.PREFIX;
}
const relay = new Relay(opts);
relay.on('error', err => console.error('relay-op error:', err.message));
await relay.waitUntilReady();

async function getters() {
  const nodes = await relay.getNodes();
  return {
    counts: await relay.getCounts(),
    patterns: await relay.getPatterns(),
    subscriptions: await relay.getSubscriptions(),
    retained: await relay.getRetained(),
    nodes: nodes.map(n => ({ id: n.id, name: n.info.name ?? null, subscriptions: n.subscriptions })),
  };
}

const print = value => process.stdout.write(JSON.stringify(value) + '\n');

if (env.OP === 'publish') {
  const retain = Number(env.RETAIN ?? 0);
  print(await relay.publish(env.TOPIC, JSON.parse(env.DATA), { retain }));
} else if (env.OP === 'getters') {
  print({ getters: await getters() });
} else if (env.OP === 'subscribe') {
  const count = Number(env.COUNT ?? 1);
  let seen = 0;
  let done;
  const all = new Promise(resolve => (done = resolve));
  await relay.subscribe(env.PATTERN, m => {
    print({ topic: m.topic, mid: m.mid, ts: m.ts, data: JSON.stringify(m.data), retained: m.retained });
    if (++seen >= count) done();
  });
  print({ ready: true, nodeId: relay.nodeId });
  await all;
  clearTimeout(timer);
  // "getters" prints them; anything else (or the end of stdin) closes.
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line.trim() !== 'getters') break;
    print({ getters: await getters() });
  }
} else {
  console.error(`unknown OP ${env.OP}`);
  process.exit(2);
}
await relay.close();
if (redis) await redis.quit();
clearTimeout(timer);
