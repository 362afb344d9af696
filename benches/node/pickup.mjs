// Node.js side of the pickup-latency benchmark: the same modes, pacing and JSON lines as
// benches/redis_pickup.rs (ours) and benches/official/src/bin/pickup.rs (the official Rust
// port), with bullmq 6.7.6 and ioredis from tests/node. benches/compare-pickup.sh runs the
// three side by side.
//
// Modes `rate{100,1000,10000}-c10`: a Worker at concurrency 10 waits on an empty queue, then
// one Queue in the same process adds jobs one at a time at the offered rate, each add started
// at its due time without waiting for the previous one's reply. Each job's data holds the wall
// clock (µs) just before its add was sent; the processor records the difference from its own
// start. Per mode: median, p99 and p99.9 over rate × BENCH_SECS jobs, after a second's worth
// (at most 1,000) of unmeasured ones.
//
// Usage: node benches/node/pickup.mjs [--mode NAME[,NAME]] [--test]; env BENCH_SECS (3),
// REDIS_URL.
import { setTimeout as sleep } from 'node:timers/promises';
import { IORedis, deletePrefix, parseArgs, redisUrl, require, uniquePrefix } from './measure.mjs';

const { Queue, Worker } = require('bullmq');

const RATES = [100, 1000, 10000];
const CONCURRENCY = 10;
const QUEUE = 'bench';

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

async function offer(queue, rate, jobs) {
  const start = performance.now();
  const adds = [];
  for (let k = 0; k < jobs; k++) {
    const due = start + (k * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    adds.push(queue.add('pickup', { t: nowUs() }));
  }
  const secs = (performance.now() - start) / 1000;
  await Promise.all(adds);
  return secs;
}

async function waitFor(latencies, n) {
  while (latencies.length < n) await sleep(5);
}

function quantileMs(v, q) {
  const i = Math.min(Math.max(Math.ceil(v.length * q), 1), v.length) - 1;
  return Number((v[i] / 1000).toFixed(3));
}

async function measure(url, rate, jobs, warmup) {
  const prefix = uniquePrefix('bench-pickup-js', `rate${rate}`);
  let latencies = [];
  // The worker's own connection: a Worker given an IORedis instance does not close it, and an
  // open connection would keep the process alive after the last mode.
  const workerConnection = new IORedis(url, { maxRetriesPerRequest: null });
  const worker = new Worker(
    QUEUE,
    async job => {
      latencies.push(nowUs() - job.data.t);
      return null;
    },
    { connection: workerConnection, prefix, concurrency: CONCURRENCY },
  );
  await worker.waitUntilReady();
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  await sleep(300);
  await offer(queue, rate, warmup);
  await waitFor(latencies, warmup);
  latencies = [];
  await sleep(300);
  const secs = await offer(queue, rate, jobs);
  await waitFor(latencies, jobs);
  await worker.close();
  await queue.close();
  connection.disconnect();
  workerConnection.disconnect();
  const v = Float64Array.from(latencies).sort();
  const admin = new IORedis(url);
  await deletePrefix(admin, prefix);
  admin.disconnect();
  console.log(
    JSON.stringify({
      impl: 'bullmq-node',
      mode: `rate${rate}-c${CONCURRENCY}`,
      jobs,
      offered_per_sec: rate,
      achieved_per_sec: Number((jobs / secs).toFixed(1)),
      p50_ms: quantileMs(v, 0.5),
      p99_ms: quantileMs(v, 0.99),
      p999_ms: quantileMs(v, 0.999),
      max_ms: quantileMs(v, 1),
    }),
  );
}

const args = parseArgs();
const rates = args.modes.length
  ? args.modes.map(m => {
      const rate = Number(/^rate(\d+)-c10$/.exec(m)?.[1]);
      if (!rate) throw new Error(`unknown mode ${m}: rate{100,1000,10000}-c10`);
      return rate;
    })
  : RATES;
const secs = Number(process.env.BENCH_SECS ?? 3);
for (const rate of rates) {
  const [jobs, warmup] = args.test ? [100, 0] : [rate * secs, Math.min(rate, 1000)];
  await measure(redisUrl(), rate, jobs, warmup);
}
