// What the Node.js PostgreSQL harnesses (pg-add.mjs, pg-worker.mjs) share: the server's URL,
// a migrated schema of their own per run, PostgreSQL's CPU time and the per-job figures,
// measured as the Rust harnesses' benches/support/postgres.rs measures them:
//
// PostgreSQL's CPU is utime + stime of /proc/<pid>/stat (USER_HZ = 100 ticks a second) summed
// over the server processes serving this process: the backends of its own connections (its
// TCP sockets to the server, /proc/self/fd + /proc/self/net/tcp{,6}, matched against
// pg_stat_activity.client_port), the admin connection excepted, plus the auxiliary processes
// (backend_type other than 'client backend'). A backend opened during the stretch counts from
// zero. The server must be local, reached over TCP.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { require } from './measure.mjs';

const pg = require('pg');
export const { Queue, Worker, createPostgresBackend } = require('bullmq');

const TICKS_PER_SEC = 100;

/** DATABASE_URL, else the local default (the tests' server). */
export const databaseUrl = () => process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

// Unix nanoseconds, as the Rust harnesses write them.
const unixNanos = () => BigInt(Date.now()) * 1000000n + (process.hrtime.bigint() % 1000000n);

/** A schema no other run uses: `{harness}_{tag}_{pid}_{unix nanoseconds}`, `-` as `_`. */
export const uniqueSchema = (harness, tag) =>
  `${harness}_${tag.replaceAll('-', '_')}_${process.pid}_${unixNanos()}`;

/** The `connection` of a Queue or Worker in `schema`, migrating it as it connects. */
export const connection = schema => ({ connectionString: databaseUrl(), schema, migrate: true });

const quote = schema => `"${schema}"`;

/** The connection a harness measures, checks and cleans up through (no schema pinned). */
export class Admin {
  static async connect() {
    const admin = new Admin();
    admin.client = new pg.Client({ connectionString: databaseUrl() });
    await admin.client.connect();
    admin.pid = (await admin.client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    return admin;
  }

  /** count(*) of `schema`'s jobs in `state` (a job_state label). */
  async count(schema, state) {
    const { rows } = await this.client.query(`SELECT count(*)::int AS n FROM ${quote(schema)}.job WHERE state = '${state}'`);
    return rows[0].n;
  }

  /** Whether `schema` still has a waiting or active job. */
  async unfinished(schema) {
    const q = quote(schema);
    const { rows } = await this.client.query(
      `SELECT EXISTS (SELECT 1 FROM ${q}.job WHERE state = 'waiting')
           OR EXISTS (SELECT 1 FROM ${q}.job WHERE state = 'active') AS u`,
    );
    return rows[0].u;
  }

  async dropSchema(schema) {
    await this.client.query(`DROP SCHEMA IF EXISTS ${quote(schema)} CASCADE`);
  }

  /** The server processes serving this process: its backends but the admin's, and the auxiliary ones. */
  async servingPids() {
    const { rows } = await this.client.query(
      `SELECT pid FROM pg_stat_activity
        WHERE (client_port = ANY($1::int[]) AND pid <> $2)
           OR backend_type <> 'client backend'`,
      [ownClientPorts(), this.pid],
    );
    return rows.map(r => r.pid);
  }

  async close() {
    await this.client.end();
  }
}

const serverPort = () => Number(new URL(databaseUrl()).port || 5432);

/** The local ports of this process's TCP connections to the server's port. */
function ownClientPorts() {
  const inodes = new Set();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // Closed in between.
    }
  }
  const server = serverPort();
  const ports = [];
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let text;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const port = addr => parseInt(addr.slice(addr.lastIndexOf(':') + 1), 16);
      if (port(f[2]) === server && inodes.has(f[9])) ports.push(port(f[1]));
    }
  }
  return ports;
}

/** utime + stime (ticks) of every process named postgres, by pid. */
function postgresTicks() {
  const ticks = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    const close = stat.lastIndexOf(')');
    if (!stat.slice(0, close).endsWith('(postgres')) continue;
    const fields = stat.slice(close + 1).trim().split(/\s+/);
    // After the `)`: state is field 3 of the man page, utime 14 and stime 15.
    ticks.set(Number(name), Number(fields[14 - 3]) + Number(fields[15 - 3]));
  }
  return ticks;
}

/** Starts a measured stretch: PostgreSQL's processes, then this process's CPU, then the wall clock. */
export function startMeter() {
  const ticksBefore = postgresTicks();
  const cpuBefore = process.cpuUsage();
  const start = process.hrtime.bigint();
  return { ticksBefore, cpuBefore, start };
}

/** Stops it: wall clock, this process's CPU, then PostgreSQL's. Seconds. */
export async function stopMeter(meter, admin) {
  const secs = Number(process.hrtime.bigint() - meter.start) / 1e9;
  const cpu = process.cpuUsage(meter.cpuBefore);
  const pids = await admin.servingPids();
  const after = postgresTicks();
  let ticks = 0;
  for (const pid of pids) {
    if (after.has(pid)) ticks += Math.max(0, after.get(pid) - (meter.ticksBefore.get(pid) ?? 0));
  }
  return { secs, cpu: (cpu.user + cpu.system) / 1e6, pg: ticks / TICKS_PER_SEC, processes: pids.length };
}

/** The figures every add and worker line carries, for `jobs` jobs. */
export const perJob = (jobs, usage) => ({
  secs: Number(usage.secs.toFixed(4)),
  jobs_per_sec: Number((jobs / usage.secs).toFixed(1)),
  client_cpu_us_per_job: Number(((usage.cpu * 1e6) / jobs).toFixed(3)),
  pg_cpu_us_per_job: Number(((usage.pg * 1e6) / jobs).toFixed(3)),
  pg_processes: usage.processes,
});
