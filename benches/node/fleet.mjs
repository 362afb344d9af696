// Node.js side of the fleet benchmark (issue 21): N Workers in one process, each at
// concurrency 500, on one queue, with bullmq 6.7.6 and ioredis from tests/node. The same
// modes, jobs, measurement and JSON lines as benches/redis_fleet.rs (ours, whose header says
// what each mode does); benches/compare-fleet.sh runs both.
//
// Modes `{busy|idle}-w<N>-{own|shared}`: `own` gives each Worker an IORedis of its own (the
// Worker duplicates it for its blocking connection), `shared` gives every Worker the same
// IORedis (each still duplicates it for blocking). `busy` (N = 1, 5, 10): BENCH_JOBS
// pre-filled jobs, instant processor, kept completed, timed from run() until `wait` and
// `active` are empty (polled every 2 ms); peak RSS is VmHWM reset as the clock starts.
// `idle` (N = 1, 10, 100): RSS (process.memoryUsage().rss), heapUsed and the server's
// connected_clients before the Workers are made and once the server counts N more blocked
// clients (at most 10 s). Each mode runs in a fresh node process (this script again, with
// --child).
//
// Usage: node benches/node/fleet.mjs [--mode busy-own,idle-own,busy-shared,idle-shared]
//   [--workers N[,N]] [--test]   (needs `npm ci --prefix tests/node`); env BENCH_JOBS
//   (20000), BENCH_WARMUP (2000), REDIS_URL (redis://127.0.0.1:6379).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  IORedis, QUEUE, addInChunks, checkFinished, deletePrefix, finishedCounts, parseArgs, perJob, require, settings,
  statusKb, timeUntilDrained, uniquePrefix,
} from './measure.mjs';

const { Queue, Worker } = require('bullmq');

const IMPL = 'bullmq-node';
const HARNESS = 'bench-fleet-js';
const CONCURRENCY = 500;
const POLL_MS = 2;
const BLOCK_WAIT_MS = 10000;
const BLOCK_POLL_MS = 10;

const KINDS = [];
for (const sharing of ['own', 'shared']) {
  for (const phase of ['busy', 'idle']) KINDS.push({ name: `${phase}-${sharing}`, phase, sharing });
}
// Ours runs busy-own, idle-own, busy-shared, idle-shared by default; so does this.
const DEFAULT_WORKERS = { busy: [1, 5, 10], idle: [1, 10, 100] };
const TEST_WORKERS = { busy: [1, 5], idle: [1, 10] };

/** `--child` and `--workers N[,N]` (the rest is measure.mjs's parseArgs). */
function fleetArgs() {
  const args = process.argv.slice(2);
  let child = false;
  const workers = [];
  for (let i = 0; i < args.length; i++) {
    let list;
    if (args[i] === '--child') child = true;
    else if (args[i] === '--workers') list = args[++i];
    else if (args[i].startsWith('--workers=')) list = args[i].slice('--workers='.length);
    if (list !== undefined) {
      for (const n of list.split(',')) {
        const count = Number(n);
        if (!Number.isInteger(count) || count < 1) throw new Error(`--workers takes counts above 0, not ${n}`);
        workers.push(count);
      }
    }
  }
  return { child, workers };
}

const modeName = (kind, workers) => `${kind.phase}-w${workers}-${kind.sharing}`;

/** A numeric field of one INFO section. */
async function infoField(admin, section, field) {
  const m = new RegExp(`^${field}:(\\d+)`, 'm').exec(await admin.info(section));
  if (!m) throw new Error(`${field} in INFO ${section}`);
  return Number(m[1]);
}

async function fill(url, prefix, jobs) {
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  await addInChunks(queue, jobs);
  await queue.close();
  connection.disconnect();
}

/** The mode's Workers, ready but not running, with the connections to drop once closed. */
async function makeFleet(url, prefix, kind, count) {
  const shared = kind.sharing === 'shared' ? new IORedis(url, { maxRetriesPerRequest: null }) : undefined;
  const connections = shared ? [shared] : [];
  const workers = [];
  const errors = [];
  for (let k = 0; k < count; k++) {
    let connection = shared;
    if (!connection) {
      connection = new IORedis(url, { maxRetriesPerRequest: null });
      connections.push(connection);
    }
    const worker = new Worker(QUEUE, async () => null, {
      connection,
      prefix,
      concurrency: CONCURRENCY,
      autorun: false,
    });
    worker.on('error', err => errors.push(err));
    workers.push(worker);
  }
  await Promise.all(workers.map(w => w.waitUntilReady()));
  return { workers, connections, errors };
}

async function closeFleet(fleet, running) {
  await Promise.all(fleet.workers.map(w => w.close()));
  await Promise.all(running);
  for (const c of fleet.connections) c.disconnect();
  if (fleet.errors.length) throw fleet.errors[0];
}

async function busyRun(cfg, admin, prefix, kind, count, jobs) {
  await fill(cfg.url, prefix, jobs);
  const fleet = await makeFleet(cfg.url, prefix, kind, count);
  const rssIdleKb = statusKb('VmRSS');
  const { secs, cpu, redis, peakRssKb, running } = await timeUntilDrained(admin, prefix, POLL_MS, () =>
    fleet.workers.map(w => w.run()),
  );
  const heapUsedKb = Math.round(process.memoryUsage().heapUsed / 1024);
  await closeFleet(fleet, running);
  const { completed, failed } = await finishedCounts(admin, prefix);
  checkFinished(completed, failed, jobs);
  return {
    jobs,
    ...perJob(jobs, secs, (cpu.user + cpu.system), redis),
    rss_idle_kb: rssIdleKb,
    peak_rss_kb: peakRssKb,
    heap_used_kb: heapUsedKb,
  };
}

async function busy(cfg, admin, kind, count) {
  if (cfg.warmup > 0) {
    const prefix = uniquePrefix(HARNESS, 'warmup');
    await busyRun(cfg, admin, prefix, kind, count, cfg.warmup);
    await deletePrefix(admin, prefix);
  }
  const prefix = uniquePrefix(HARNESS, modeName(kind, count));
  const fields = await busyRun(cfg, admin, prefix, kind, count, cfg.jobs);
  await deletePrefix(admin, prefix);
  return fields;
}

async function idle(cfg, admin, kind, count) {
  const prefix = uniquePrefix(HARNESS, modeName(kind, count));
  const blockedBefore = await infoField(admin, 'clients', 'blocked_clients');
  const connectionsBefore = await infoField(admin, 'clients', 'connected_clients');
  const before = process.memoryUsage();
  const fleet = await makeFleet(cfg.url, prefix, kind, count);
  const running = fleet.workers.map(w => w.run());
  const started = Date.now();
  let blocked;
  for (;;) {
    blocked = Math.max(0, (await infoField(admin, 'clients', 'blocked_clients')) - blockedBefore);
    if (blocked >= count || Date.now() - started > BLOCK_WAIT_MS) break;
    await sleep(BLOCK_POLL_MS);
  }
  const after = process.memoryUsage();
  const connectionsAfter = await infoField(admin, 'clients', 'connected_clients');
  await closeFleet(fleet, running);
  await deletePrefix(admin, prefix);
  const kb = bytes => Math.round(bytes / 1024);
  const per = (a, b) => (b - a) / count;
  return {
    rss_before_kb: kb(before.rss),
    rss_after_kb: kb(after.rss),
    kb_per_worker: Number(per(kb(before.rss), kb(after.rss)).toFixed(1)),
    connections_before: connectionsBefore,
    connections_after: connectionsAfter,
    connections_per_worker: Number(per(connectionsBefore, connectionsAfter).toFixed(2)),
    blocked,
    heap_used_before_kb: kb(before.heapUsed),
    heap_used_after_kb: kb(after.heapUsed),
  };
}

async function child(cfg, kind, count) {
  const admin = new IORedis(cfg.url);
  try {
    const fields = kind.phase === 'busy' ? await busy(cfg, admin, kind, count) : await idle(cfg, admin, kind, count);
    const line = {
      impl: IMPL,
      mode: modeName(kind, count),
      phase: kind.phase,
      sharing: kind.sharing,
      workers: count,
      concurrency: CONCURRENCY,
      ...fields,
    };
    console.log(JSON.stringify(line));
  } finally {
    admin.disconnect();
  }
}

const { test, modes } = parseArgs();
const { child: isChild, workers } = fleetArgs();
const cfg = settings(KINDS, k => k.name);
// Ours' order: busy-own, idle-own, busy-shared, idle-shared; a smoke run without --mode runs
// the own backends only.
let kinds = modes.length ? cfg.modes : ['busy-own', 'idle-own', 'busy-shared', 'idle-shared'].map(n => KINDS.find(k => k.name === n));
if (test && !modes.length) kinds = kinds.filter(k => k.sharing === 'own');
if (isChild) {
  if (kinds.length !== 1 || workers.length !== 1) throw new Error('--child runs one mode');
  await child(cfg, kinds[0], workers[0]);
} else {
  const script = fileURLToPath(import.meta.url);
  for (const kind of kinds) {
    for (const count of workers.length ? workers : (test ? TEST_WORKERS : DEFAULT_WORKERS)[kind.phase]) {
      const args = [script, '--child', '--mode', kind.name, '--workers', String(count)];
      if (test) args.push('--test');
      const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
      if (r.status !== 0) throw new Error(`mode ${modeName(kind, count)} failed: ${r.status ?? r.signal}`);
    }
  }
}
