// Node.js side of the codec benchmark: the same operations as benches/codec.rs, done the way
// bullmq@6.7.0 does them (its own optsAsJSON/pack and optsFromJSON/rawToJobJson), on the same
// options. Prints one line per operation: `<name> <ns per op>`.
//
// Usage: node benches/node/codec.mjs   (needs `npm ci --prefix tests/node`)
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../tests/node/', import.meta.url));
const { Packr } = require('msgpackr');
const { optsEncodeMap, optsDecodeMap } = require('bullmq/dist/cjs/utils/index.js');

const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

// bullmq's optsAsJSON / optsFromJSON are module-private in 6.7.0 (redis-queue-backend.js);
// these follow them statement by statement.
function optsAsJSON(opts = {}) {
  const options = {};
  for (const [k, v] of Object.entries(opts)) {
    if (typeof v === 'undefined') continue;
    if (k in optsEncodeMap) options[optsEncodeMap[k]] = v;
    else if (k === 'telemetry') {
      if (v.metadata !== undefined) options.tm = v.metadata;
      if (v.omitContext !== undefined) options.omc = v.omitContext;
    } else options[k] = v;
  }
  return options;
}
function optsFromJSON(raw) {
  const opts = JSON.parse(raw || '{}');
  const options = {};
  for (const [k, v] of Object.entries(opts)) {
    if (optsDecodeMap[k]) options[optsDecodeMap[k]] = v;
    else if (k === 'tm') options.telemetry = { ...options.telemetry, metadata: v };
    else if (k === 'omc') options.telemetry = { ...options.telemetry, omitContext: v };
    else options[k] = v;
  }
  return options;
}
function rawToJobJson(raw) {
  return {
    id: raw.id, name: raw.name, data: raw.data || '{}', opts: optsFromJSON(raw.opts),
    progress: JSON.parse(raw.progress || '0'), delay: parseInt(raw.delay),
    priority: parseInt(raw.priority), timestamp: parseInt(raw.timestamp),
    attemptsStarted: parseInt(raw.ats || '0'), attemptsMade: parseInt(raw.attemptsMade || raw.atm || '0'),
    stalledCounter: parseInt(raw.stc || '0'),
    finishedOn: raw.finishedOn ? parseInt(raw.finishedOn) : undefined,
    processedOn: raw.processedOn ? parseInt(raw.processedOn) : undefined,
    repeatJobKey: raw.rjk, deduplicationId: raw.deid, failedReason: raw.failedReason,
    deferredFailure: raw.defa, stacktrace: raw.stacktrace, returnvalue: raw.returnvalue,
    parentKey: raw.parentKey, parent: raw.parent ? JSON.parse(raw.parent) : undefined, processedBy: raw.pb,
  };
}

// The same options as benches/codec.rs `typical()`, after Node's Job constructor.
const opts = {
  attempts: 5, delay: 3000, backoff: { type: 'exponential', delay: 1000, jitter: 0.2 },
  removeOnComplete: 1000, removeOnFail: { age: 86400 }, keepLogs: 50,
  deduplication: { id: 'user-42', ttl: 5000 },
};
const stored = JSON.stringify(optsAsJSON(opts));
const hash = {
  id: '1', name: 'resize', data: '{"url":"https://example.com/a.png","w":640}', opts: stored,
  timestamp: '1', delay: '3000', priority: '0', deid: 'user-42', processedOn: '1700000000500', ats: '1',
};

let sink = 0;
function bench(name, fn) {
  for (let i = 0; i < 200_000; i++) sink ^= fn() ? 1 : 0; // warm up the JIT
  const rounds = 1_000_000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) sink ^= fn() ? 1 : 0;
  const ns = Number(process.hrtime.bigint() - start) / rounds;
  console.log(`${name} ${ns.toFixed(1)}`);
}

bench('options_to_msgpack', () => packer.pack(optsAsJSON(opts)));
bench('options_to_json', () => JSON.stringify(optsAsJSON(opts)));
bench('options_from_json', () => optsFromJSON(stored));
bench('job_from_hash', () => rawToJobJson(hash));
if (sink === 42) console.log('');
