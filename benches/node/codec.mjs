// Node.js side of the codec benchmark: the same operations as benches/codec.rs, with bullmq
// 6.7.6's packer settings and key maps, on the same options. Prints one line per operation: `<name> <ns per op>`.
//
// Usage: node benches/node/codec.mjs   (needs `npm ci --prefix tests/node`)
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../tests/node/', import.meta.url));
const { Packr } = require('msgpackr');
const { optsEncodeMap, optsDecodeMap } = require('bullmq/dist/cjs/utils/index.js');

const packer = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

// bullmq 6.7.6 keeps its option encoder and job-hash reader private to its Redis backend, so
// the same work is spelled out here: rename the six compressible options (bullmq's own maps) and
// flatten telemetry to tm/omc on the way in; JSON.parse, rename back and parseInt the numeric
// hash fields on the way out.
const TELEMETRY_OUT = { metadata: 'tm', omitContext: 'omc' };
const TELEMETRY_IN = { tm: 'metadata', omc: 'omitContext' };

function encodeOpts(opts) {
  const out = {};
  for (const key of Object.keys(opts)) {
    const value = opts[key];
    if (value === undefined) continue;
    if (key !== 'telemetry') {
      out[optsEncodeMap[key] ?? key] = value;
      continue;
    }
    for (const [long, short] of Object.entries(TELEMETRY_OUT)) {
      if (value[long] !== undefined) out[short] = value[long];
    }
  }
  return out;
}

function decodeOpts(text) {
  const out = {};
  const parsed = JSON.parse(text || '{}');
  for (const key of Object.keys(parsed)) {
    if (key in TELEMETRY_IN) {
      out.telemetry = { ...out.telemetry, [TELEMETRY_IN[key]]: parsed[key] };
    } else {
      out[optsDecodeMap[key] ?? key] = parsed[key];
    }
  }
  return out;
}

const int = (v, dflt) => parseInt(v ?? dflt);
function readJobHash(h) {
  return {
    id: h.id, name: h.name, data: h.data ?? '{}', opts: decodeOpts(h.opts),
    progress: JSON.parse(h.progress ?? '0'),
    timestamp: int(h.timestamp), delay: int(h.delay), priority: int(h.priority),
    attemptsStarted: int(h.ats, '0'), attemptsMade: int(h.attemptsMade || h.atm, '0'),
    stalledCounter: int(h.stc, '0'),
    processedOn: h.processedOn ? int(h.processedOn) : undefined,
    finishedOn: h.finishedOn ? int(h.finishedOn) : undefined,
    parent: h.parent ? JSON.parse(h.parent) : undefined,
    parentKey: h.parentKey, repeatJobKey: h.rjk, deduplicationId: h.deid,
    failedReason: h.failedReason, stacktrace: h.stacktrace, returnvalue: h.returnvalue,
    deferredFailure: h.defa, processedBy: h.pb,
  };
}

// The same options as benches/codec.rs `typical()`, after Node's Job constructor.
const opts = {
  attempts: 5, delay: 3000, backoff: { type: 'exponential', delay: 1000, jitter: 0.2 },
  removeOnComplete: 1000, removeOnFail: { age: 86400 }, keepLogs: 50,
  deduplication: { id: 'user-42', ttl: 5000 },
};
const stored = JSON.stringify(encodeOpts(opts));
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

bench('options_to_msgpack', () => packer.pack(encodeOpts(opts)));
bench('options_to_json', () => JSON.stringify(encodeOpts(opts)));
bench('options_from_json', () => decodeOpts(stored));
bench('job_from_hash', () => readJobHash(hash));
if (sink === 42) console.log('');
