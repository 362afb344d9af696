// Node.js side of benches/redis_queues.rs: N queues at once on one standalone Redis or on a
// Redis Cluster (ioredis `Cluster`), the same modes, queue names, jobs and JSON lines, with
// bullmq 6.7.6 and ioredis from tests/node. See benches/redis_queues.rs for what is measured;
// benches/compare-cluster.sh runs both.
//
// Usage: node benches/node/queues.mjs [--mode add|worker]... [--test]
//   env REDIS_URL (redis://… or redis+cluster://host:port,…), BENCH_QUEUES (1), BENCH_JOBS
//   (20000 over all queues), BENCH_WARMUP (2000).
import {
  IORedis, addInChunks, deletePrefix, parseArgs, perJob, redisCpu, require, redisUrl,
} from './measure.mjs';

const { Queue, Worker } = require('bullmq');

const IMPL = 'bullmq-node';
const POLL_MS = 2;
const CONCURRENCY = 100;
let runs = 0;

const hostPort = s => {
  const i = s.lastIndexOf(':');
  return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
};

/** Every node, and for a cluster each primary's slot ranges (by first slot). */
async function discover(url) {
  if (!url.startsWith('redis+cluster://')) {
    // A standalone server's replicas (`slaveN:ip=…,port=…` of INFO replication).
    const con = new IORedis(url);
    const info = await con.info('replication');
    con.disconnect();
    const replicas = [...info.matchAll(/^slave\d+:ip=([^,]+),port=(\d+)/gm)].map(m => [`redis://${m[1]}:${m[2]}`, url]);
    return { url, cluster: false, nodes: [url, ...replicas.map(([r]) => r)], primaries: [], replicas };
  }
  const seeds = url.slice('redis+cluster://'.length).replace(/\/$/, '').split(',').map(hostPort);
  const seed = new IORedis(seeds[0]);
  const slots = await seed.cluster('SLOTS');
  seed.disconnect();
  const nodes = [];
  const primaries = [];
  const replicas = [];
  for (const [start, end, ...members] of slots) {
    // A node alone in its cluster does not know its own address.
    const addresses = members.map(([host, port]) => `redis://${host || seeds[0].host}:${port}`);
    for (const a of addresses) if (!nodes.includes(a)) nodes.push(a);
    for (const r of addresses.slice(1)) {
      if (!replicas.some(([x]) => x === r)) replicas.push([r, addresses[0]]);
    }
    let p = primaries.find(x => x.url === addresses[0]);
    if (!p) primaries.push((p = { url: addresses[0], ranges: [] }));
    p.ranges.push([start, end]);
  }
  primaries.sort((a, b) => Math.min(...a.ranges.map(r => r[0])) - Math.min(...b.ranges.map(r => r[0])));
  return { url, cluster: true, seeds, nodes, primaries, replicas };
}

/** `n` tags, queue k's on primary k mod P, with its node's URL (as benches/redis_queues.rs). */
async function tags(servers, n) {
  if (!servers.cluster) return Array.from({ length: n }, (_, k) => [`q${k}`, servers.url]);
  const con = new IORedis(servers.primaries[0].url);
  const chosen = [];
  let candidate = 0;
  for (let k = 0; k < n; k++) {
    const want = k % servers.primaries.length;
    for (;;) {
      const tag = `q${candidate++}`;
      const slot = await con.cluster('KEYSLOT', tag);
      const owner = servers.primaries.findIndex(p => p.ranges.some(([s, e]) => slot >= s && slot <= e));
      if (owner === want) {
        chosen.push([tag, servers.primaries[want].url]);
        break;
      }
    }
  }
  con.disconnect();
  return chosen;
}

/** A connection for bullmq: a `Cluster` on a cluster. */
const connect = servers =>
  servers.cluster
    ? new IORedis.Cluster(servers.seeds, { redisOptions: { maxRetriesPerRequest: null } })
    : new IORedis(servers.url, { maxRetriesPerRequest: null });

const replField = async (con, field) =>
  Number(new RegExp(`^${field}:(-?\\d+)`, 'm').exec(await con.info('replication'))?.[1] ?? -1);

/** Waits until every replica has applied its primary's writes so far (5 s at most). */
async function settle(servers) {
  for (const [replica, primary] of servers.replicas ?? []) {
    const r = new IORedis(replica);
    const p = new IORedis(primary);
    const target = await replField(p, 'master_repl_offset');
    const deadline = Date.now() + 5000;
    while ((await replField(r, 'slave_repl_offset')) < target && Date.now() < deadline) {
      await new Promise(res => setTimeout(res, POLL_MS));
    }
    r.disconnect();
    p.disconnect();
  }
}


async function run(servers, cpus, mode, n, jobs) {
  const prefix = `bq${process.pid}x${runs++}`;
  const queues = (await tags(servers, n)).map(([tag, node]) => ({ name: `{${tag}}`, node: new IORedis(node) }));
  const perQueue = Math.floor(jobs / n);
  const connections = [];
  const open = () => {
    const c = connect(servers);
    connections.push(c);
    return c;
  };
  const cpuAll = () => Promise.all(cpus.map(redisCpu));
  let before, cpuBefore, start;
  // The servers settled, then the CPU counters and the clock read: what is measured starts here.
  const startClock = async () => {
    await settle(servers);
    before = await cpuAll();
    cpuBefore = process.cpuUsage();
    start = process.hrtime.bigint();
  };
  const workers = [];
  if (mode === 'add') {
    const ready = [];
    for (const q of queues) {
      const queue = new Queue(q.name, { connection: open(), prefix });
      await queue.waitUntilReady();
      ready.push(queue);
    }
    await startClock();
    await Promise.all(ready.map(queue => addInChunks(queue, perQueue, {})));
    ready.forEach(queue => workers.push(queue));
  } else {
    for (const q of queues) {
      const queue = new Queue(q.name, { connection: open(), prefix });
      await addInChunks(queue, perQueue, {});
      await queue.close();
    }
    for (const q of queues) {
      const worker = new Worker(q.name, async () => null, {
        connection: open(),
        prefix,
        concurrency: CONCURRENCY,
        autorun: false,
      });
      worker.on('error', err => {
        throw err;
      });
      await worker.waitUntilReady();
      workers.push(worker);
    }
    await startClock();
    const running = workers.map(w => w.run());
    for (;;) {
      let left = 0;
      for (const q of queues) {
        const [[, wait], [, active]] = await q.node
          .pipeline()
          .llen(`${prefix}:${q.name}:wait`)
          .llen(`${prefix}:${q.name}:active`)
          .exec();
        left += wait + active;
      }
      if (left === 0) break;
      await new Promise(r => setTimeout(r, POLL_MS));
    }
    workers.push(...running);
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  const after = await cpuAll();
  for (const w of workers) if (typeof w.close === 'function') await w.close();
  const spent = after.map((a, i) => a - before[i]);
  const server = spent.reduce((a, b) => a + b, 0);
  const busiest = Math.max(...spent);
  let done = 0;
  for (const q of queues) {
    const key = `${prefix}:${q.name}:${mode === 'add' ? 'wait' : 'completed'}`;
    done += mode === 'add' ? await q.node.llen(key) : await q.node.zcard(key);
  }
  // Queue by queue: two queues on one node are in two slots, which one UNLINK refuses.
  for (const q of queues) {
    await deletePrefix(q.node, `${prefix}:${q.name}`);
    q.node.disconnect();
  }
  for (const c of connections) c.disconnect();
  const total = perQueue * n;
  if (done !== total) throw new Error(`${done} jobs done, not ${total}`);
  return {
    ...perJob(total, secs, cpu.user + cpu.system, server),
    busiest_node_cpu_us_per_job: Number(((busiest * 1e6) / total).toFixed(3)),
    nodes: servers.nodes.length,
  };
}

const args = parseArgs();
const jobs = args.test ? 200 : Number(process.env.BENCH_JOBS ?? 20000);
const warmup = args.test ? 0 : Number(process.env.BENCH_WARMUP ?? Math.min(2000, jobs));
const n = Math.max(1, Number(process.env.BENCH_QUEUES ?? 1));
const servers = await discover(redisUrl());
const cpus = servers.nodes.map(u => new IORedis(u));
for (const mode of args.modes.length ? args.modes : ['add', 'worker']) {
  if (!['add', 'worker'].includes(mode)) throw new Error(`unknown mode ${mode}: add, worker`);
  if (warmup > 0) await run(servers, cpus, mode, n, Math.max(warmup, n));
  const fields = await run(servers, cpus, mode, n, jobs);
  // perJob names the server `redis`; the Rust line says `server` (every node's).
  const { redis_cpu_us_per_job: serverCpu, ...rest } = fields;
  console.log(JSON.stringify({ impl: IMPL, mode, queues: n, jobs: Math.floor(jobs / n) * n, ...rest, server_cpu_us_per_job: serverCpu }));
}
cpus.forEach(c => c.disconnect());
// ioredis `Cluster` connections that bullmq duplicated can keep the event loop alive.
process.exit(0);
