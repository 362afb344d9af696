#!/usr/bin/env node
// Golden job-option encodings produced by the real npm bullmq@6.7.6.
//
// For every case in opts-corpus.mjs this script calls `queue.add('golden', {}, opts)`
// against a real Redis and prints one JSON object per line:
//
//   {"name", "script", "jobId", "msgpack", "stored", "nodeOpts", "decoded"[, "parentField"]}
//
//   msgpack     hex of ARGV[3] (the packed opts map) exactly as sent to Redis; captured by
//               intercepting the ioredis command
//   stored      the job hash `opts` field as the Lua script stored it (cjson text)
//   nodeOpts    job.opts after Node constructed the job (JSON.stringify view)
//   decoded     (await Job.fromId(queue, id)).opts, i.e. what Node decodes from Redis
//   script      which add script ran (addStandardJob / addDelayedJob / addPrioritizedJob)
//   parentField the job hash `parent` field (only for cases with a parent)
//   rjk         the job hash `rjk` field (only when opts.repeatJobKey was given)
//
// Then, for every entry of `rejectedCases`, one line {"name", "rejected"} with the
// Error message Node threw (the script fails if it differs from the recorded one).
//
// Each case gets its own queue `q<index>` under the run's prefix (GOLDEN_PREFIX,
// else `bullmq-golden-<random>`); every key under that prefix is deleted at the end.
// Parent cases need the parent job hash to exist (the add scripts return -5
// otherwise), so the parent `<prefix>:parentq:golden-parent` is created for the run.
//
// Usage: REDIS_URL=redis://127.0.0.1:6379 node opts-golden.mjs > golden.jsonl

import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';
import { corpus, rejectedCases, PREFIX, writeParent } from './opts-corpus.mjs';

const require = createRequire(import.meta.url);
const { Queue, Job } = require('bullmq');
const IORedis = require('ioredis');
const scripts = require('bullmq/dist/cjs/scripts/index.js');

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const JOB_NAME = 'golden';

function fail(msg) {
  process.stderr.write(`opts-golden: ${msg}\n`);
  process.exitCode = 1;
}

// sha1 -> script name, for the add scripts we want to observe.
const ADD_SCRIPTS = {};
for (const s of Object.values(scripts)) {
  if (['addStandardJob', 'addDelayedJob', 'addPrioritizedJob', 'addParentJob'].includes(s.name)) {
    ADD_SCRIPTS[createHash('sha1').update(s.content, 'utf8').digest('hex')] = s;
  }
}

const toHex = v => (Buffer.isBuffer(v) ? v : Buffer.from(String(v), 'utf8')).toString('hex');

async function checkRedis() {
  const probe = new IORedis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 3000,
  });
  let lastError = null;
  probe.on('error', err => {
    lastError = err;
  });
  try {
    await probe.connect();
    await probe.ping();
  } catch (err) {
    const cause = (lastError || err).message;
    const e = new Error(
      `cannot reach Redis at ${REDIS_URL} (${cause}). ` +
        'Start a server (e.g. `redis-server --daemonize yes`) or set REDIS_URL.',
    );
    e.expected = true;
    throw e;
  } finally {
    probe.disconnect();
  }
}

async function deleteByPattern(client, pattern) {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
    cursor = next;
    if (keys.length) await client.del(...keys);
  } while (cursor !== '0');
}

async function main() {
  await checkRedis();

  // One shared ioredis connection for every Queue, with sendCommand wrapped so
  // the exact EVALSHA/EVAL arguments of the add scripts are captured.
  const connection = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
  let captured = [];
  const origSendCommand = connection.sendCommand.bind(connection);
  connection.sendCommand = function (command, stream) {
    const cmd = String(command.name).toLowerCase();
    if (cmd === 'evalsha' || cmd === 'eval') {
      const head = command.args[0];
      const sha =
        cmd === 'evalsha'
          ? String(head)
          : createHash('sha1').update(String(head), 'utf8').digest('hex');
      const script = ADD_SCRIPTS[sha];
      if (script) {
        const numKeys = Number(command.args[1]);
        const argv = command.args.slice(2 + numKeys);
        captured.push({ script: script.name, cmd, argv });
      }
    }
    return origSendCommand(command, stream);
  };

  const admin = new IORedis(REDIS_URL, { maxRetriesPerRequest: 3 });
  const lines = [];

  try {
    for (const [index, { name, opts }] of corpus.entries()) {
      const queue = new Queue(`q${index}`, { connection, prefix: PREFIX });
      try {
        captured = [];
        if (opts.parent) await writeParent(admin);
        const job = await queue.add(JOB_NAME, {}, structuredClone(opts));

        if (captured.length === 0) throw new Error(`${name}: no add script call was intercepted`);
        const last = captured[captured.length - 1];
        // NOSCRIPT fallback sends the same arguments twice (EVALSHA, then EVAL).
        for (const c of captured) {
          if (toHex(c.argv[2]) !== toHex(last.argv[2])) {
            throw new Error(`${name}: inconsistent ARGV[3] between EVALSHA and EVAL`);
          }
        }
        const msgpack = toHex(last.argv[2]);

        const jobKey = `${PREFIX}:q${index}:${job.id}`;
        const [stored, parentField, rjk] = await admin.hmget(jobKey, 'opts', 'parent', 'rjk');
        if (stored === null) throw new Error(`${name}: job hash ${jobKey} has no opts field`);
        const fetched = await Job.fromId(queue, job.id);
        if (!fetched) throw new Error(`${name}: Job.fromId returned nothing for ${job.id}`);

        const line = {
          name,
          queue: `q${index}`,
          script: last.script,
          jobId: job.id,
          msgpack,
          stored,
          nodeOpts: JSON.parse(JSON.stringify(job.opts)),
          decoded: JSON.parse(JSON.stringify(fetched.opts)),
        };
        if (parentField !== null) line.parentField = parentField;
        if (rjk !== null) line.rjk = rjk;
        lines.push(line);
      } finally {
        await queue.close();
      }
    }

    for (const { name, opts, data, error } of rejectedCases) {
      const queue = new Queue('rejected', { connection, prefix: PREFIX });
      try {
        captured = [];
        let message = null;
        try {
          await queue.add(JOB_NAME, data ?? {}, structuredClone(opts));
        } catch (err) {
          message = err.message;
        }
        if (message === null) throw new Error(`${name}: expected Node to reject these options`);
        if (captured.length) throw new Error(`${name}: rejected case reached Redis`);
        if (error !== undefined && message !== error) {
          throw new Error(`${name}: expected error ${JSON.stringify(error)}, got ${JSON.stringify(message)}`);
        }
        lines.push({ name, rejected: message });
      } finally {
        await queue.close();
      }
    }
  } finally {
    try {
      // GOLDEN_KEEP=1 leaves the jobs for the caller to compare with, and to delete.
      if (process.env.GOLDEN_KEEP !== '1') await deleteByPattern(admin, `${PREFIX}:*`);
    } finally {
      connection.disconnect();
      admin.disconnect();
    }
  }

  for (const line of lines) process.stdout.write(JSON.stringify(line) + '\n');
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  err => {
    fail(err && err.expected ? err.message : err && err.stack ? err.stack : String(err));
    process.exit(1);
  },
);
