// Job-option corpus for cross-runtime golden tests against npm bullmq@6.7.6.
//
// Every entry is written the way a Node.js BullMQ user would pass it to
// `queue.add(name, data, opts)`. Keys are written in one canonical order so a
// typed Rust encoder can reproduce the exact msgpack bytes:
//
//   jobId, timestamp, priority, delay, attempts, backoff, lifo,
//   removeOnComplete, removeOnFail, keepLogs, stackTraceLimit, sizeLimit,
//   parent, failParentOnFailure, continueParentOnFailure,
//   ignoreDependencyOnFailure, removeDependencyOnFailure, deduplication,
//   telemetry, repeat
//   (repeatJobKey, when used, goes last: bullmq strips it from the stored opts)
//
//   backoff:        type, delay, jitter
//   removeOn*:      age, count, limit
//   parent:         id, queue
//   deduplication:  id, ttl, extend, replace, reschedule, keepLastIfActive
//   telemetry:      metadata, omitContext
//
// Note that bullmq itself re-orders the top level before packing: the Job
// constructor builds `{attempts: 0, ...opts}` so `attempts` always comes first,
// `Queue.addJob` appends `jobId` (undefined unless given) and the constructor
// appends `backoff` (undefined unless given); undefined values are dropped by
// `optsAsJSON`. See opts-golden.mjs for the exact bytes.
//
// `parent.queue` is the fully qualified queue key (prefix + ':' + queue name),
// under the run's own prefix: GOLDEN_PREFIX when set (the Rust tests set it, so
// they know the parent key the bytes contain), else a random one.
// opts-golden.mjs creates the parent job hash `<prefix>:parentq:golden-parent`
// for the duration of the run so that the add scripts' parent-existence check
// passes; it goes with every other key of the prefix at the end.

import { randomBytes } from 'node:crypto';

export const PREFIX =
  process.env.GOLDEN_PREFIX || `bullmq-golden-${randomBytes(6).toString('hex')}`;
if (!/^[A-Za-z0-9_.{}-]+$/.test(PREFIX)) {
  throw new Error(`GOLDEN_PREFIX must be letters, digits, '_', '.', '-' or braces: ${PREFIX}`);
}
export const PARENT = Object.freeze({ id: 'golden-parent', queue: `${PREFIX}:parentq` });
const parent = () => ({ id: PARENT.id, queue: PARENT.queue });

/**
 * Writes, on the ioredis `client`, a minimal job hash standing in for PARENT waiting on its
 * children: the add scripts only check `EXISTS parentKey`, then SADD the child's key to
 * `<parentKey>:dependencies`.
 */
export async function writeParent(client) {
  await client.hset(`${PARENT.queue}:${PARENT.id}`, {
    name: 'golden-parent',
    data: '{}',
    opts: '{"attempts":0}',
    timestamp: String(Date.now()),
    delay: '0',
    priority: '0',
  });
}

export const corpus = [
  // --- baseline -----------------------------------------------------------
  { name: 'empty', opts: {} },

  // --- delay ----------------------------------------------------------------
  { name: 'delay-0', opts: { delay: 0 } },
  { name: 'delay-1000', opts: { delay: 1000 } },
  { name: 'delay-uint32-max', opts: { delay: 4294967295 } },
  { name: 'delay-2pow32', opts: { delay: 4294967296 } },
  { name: 'delay-large', opts: { delay: 1234567890123456 } },
  { name: 'delay-float', opts: { delay: 1.5 } },
  { name: 'delay-negative', opts: { delay: -1 } },

  // --- priority -------------------------------------------------------------
  { name: 'priority-0', opts: { priority: 0 } },
  { name: 'priority-1', opts: { priority: 1 } },
  { name: 'priority-127', opts: { priority: 127 } },
  { name: 'priority-128', opts: { priority: 128 } },
  { name: 'priority-max', opts: { priority: 2097151 } },
  { name: 'priority-negative', opts: { priority: -1 } },

  // --- attempts -------------------------------------------------------------
  { name: 'attempts-0', opts: { attempts: 0 } },
  { name: 'attempts-3', opts: { attempts: 3 } },
  { name: 'attempts-2pow31', opts: { attempts: 2 ** 31 } },
  { name: 'attempts-2pow32', opts: { attempts: 2 ** 32 } },
  { name: 'attempts-negative', opts: { attempts: -1 } },
  { name: 'attempts-int32-min', opts: { attempts: -(2 ** 31) } },
  { name: 'attempts-below-int32', opts: { attempts: -(2 ** 31) - 1 } },

  // --- backoff --------------------------------------------------------------
  { name: 'backoff-number', opts: { attempts: 3, backoff: 1000 } },
  { name: 'backoff-number-0', opts: { backoff: 0 } },
  { name: 'backoff-fixed', opts: { attempts: 3, backoff: { type: 'fixed', delay: 500 } } },
  {
    name: 'backoff-exponential-jitter',
    opts: { attempts: 5, backoff: { type: 'exponential', delay: 1000, jitter: 0.5 } },
  },
  {
    name: 'backoff-fixed-jitter-quarter',
    opts: { backoff: { type: 'fixed', delay: 250, jitter: 0.25 } },
  },
  { name: 'backoff-jitter-1', opts: { backoff: { type: 'exponential', delay: 10, jitter: 1 } } },
  { name: 'backoff-custom-type', opts: { attempts: 2, backoff: { type: 'my-custom-strategy' } } },
  {
    name: 'backoff-custom-type-delay',
    opts: { backoff: { type: 'linear', delay: 2000 } },
  },

  // --- lifo -----------------------------------------------------------------
  { name: 'lifo-true', opts: { lifo: true } },
  { name: 'lifo-false', opts: { lifo: false } },

  // --- jobId / timestamp ----------------------------------------------------
  { name: 'jobid-custom', opts: { jobId: 'my-custom-id' } },
  { name: 'jobid-unicode', opts: { jobId: 'job-ü-✓' } },
  { name: 'jobid-repeat-form', opts: { jobId: 'repeat:abc:1700000000000' } },
  { name: 'timestamp', opts: { timestamp: 1700000000000 } },
  {
    name: 'jobid-timestamp-delay',
    opts: { jobId: 'custom-delayed', timestamp: 1700000000123, delay: 60000 },
  },

  // --- removeOnComplete / removeOnFail ---------------------------------------
  { name: 'roc-true', opts: { removeOnComplete: true } },
  { name: 'roc-false', opts: { removeOnComplete: false } },
  { name: 'roc-number', opts: { removeOnComplete: 100 } },
  { name: 'roc-count', opts: { removeOnComplete: { count: 10 } } },
  { name: 'roc-age', opts: { removeOnComplete: { age: 3600 } } },
  { name: 'roc-age-count-limit', opts: { removeOnComplete: { age: 86400, count: 1000, limit: 50 } } },
  { name: 'rof-true', opts: { removeOnFail: true } },
  { name: 'rof-false', opts: { removeOnFail: false } },
  { name: 'rof-number', opts: { removeOnFail: 500 } },
  { name: 'rof-count', opts: { removeOnFail: { count: 0 } } },
  { name: 'rof-age', opts: { removeOnFail: { age: 604800 } } },
  { name: 'rof-age-count-limit', opts: { removeOnFail: { age: 60, count: 5, limit: 1 } } },

  // --- keepLogs / stackTraceLimit / sizeLimit ----------------------------------
  { name: 'keeplogs', opts: { keepLogs: 10 } },
  { name: 'keeplogs-0', opts: { keepLogs: 0 } },
  { name: 'stacktracelimit-0', opts: { stackTraceLimit: 0 } },
  { name: 'stacktracelimit-5', opts: { stackTraceLimit: 5 } },
  { name: 'sizelimit', opts: { sizeLimit: 1024 } },

  // --- parent ----------------------------------------------------------------
  { name: 'parent', opts: { parent: parent() } },
  { name: 'parent-fpof', opts: { parent: parent(), failParentOnFailure: true } },
  { name: 'parent-cpof', opts: { parent: parent(), continueParentOnFailure: true } },
  { name: 'parent-idof', opts: { parent: parent(), ignoreDependencyOnFailure: true } },
  { name: 'parent-rdof', opts: { parent: parent(), removeDependencyOnFailure: true } },
  {
    name: 'parent-fpof-false-idof',
    opts: { parent: parent(), failParentOnFailure: false, ignoreDependencyOnFailure: true },
  },

  // --- deduplication ----------------------------------------------------------
  { name: 'dedup-id', opts: { deduplication: { id: 'dedup-a' } } },
  { name: 'dedup-id-ttl', opts: { deduplication: { id: 'dedup-b', ttl: 5000 } } },
  {
    name: 'dedup-extend-replace',
    opts: { delay: 5000, deduplication: { id: 'dedup-c', ttl: 5000, extend: true, replace: true } },
  },
  {
    name: 'dedup-reschedule',
    opts: { delay: 2000, deduplication: { id: 'dedup-d', ttl: 10000, reschedule: true } },
  },
  { name: 'dedup-keep-last-if-active', opts: { deduplication: { id: 'dedup-e', keepLastIfActive: true } } },
  { name: 'dedup-ttl-2pow53-plus-2', opts: { deduplication: { id: 'dedup-f', ttl: 2 ** 53 + 2 } } },

  // --- telemetry ----------------------------------------------------------------
  { name: 'telemetry-metadata', opts: { telemetry: { metadata: '{"traceparent":"00-abc-def-01"}' } } },
  { name: 'telemetry-omit-context', opts: { telemetry: { omitContext: true } } },
  {
    name: 'telemetry-metadata-omit-false',
    opts: { telemetry: { metadata: 'opaque-propagation-string', omitContext: false } },
  },

  // --- repeat (internal: what scheduler-produced jobs carry; Queue.add stores it verbatim)
  {
    name: 'repeat-passthrough',
    opts: {
      jobId: 'repeat:sched-1:1700000005000',
      timestamp: 1700000000000,
      delay: 5000,
      repeat: { every: 5000, offset: 0, count: 1 },
    },
  },

  // --- repeatJobKey: stripped from opts by the Job constructor, stored as hash field `rjk`
  {
    name: 'repeatjobkey-stripped',
    opts: { jobId: 'repeat:sched-2:1700000000000', repeatJobKey: 'sched-2' },
  },

  // --- combos -------------------------------------------------------------------
  {
    name: 'combo-typical',
    opts: {
      priority: 10,
      delay: 3000,
      attempts: 5,
      backoff: { type: 'exponential', delay: 1000 },
      removeOnComplete: true,
      removeOnFail: { count: 100 },
    },
  },
  {
    name: 'combo-everything-but-parent',
    opts: {
      jobId: 'combo-1',
      timestamp: 1700000000000,
      priority: 2097151,
      delay: 1234567890123456,
      attempts: 2 ** 32,
      backoff: { type: 'exponential', delay: 1.5, jitter: 0.25 },
      lifo: true,
      removeOnComplete: { age: 3600, count: 10, limit: 5 },
      removeOnFail: 7,
      keepLogs: 20,
      stackTraceLimit: 0,
      sizeLimit: 4096,
      deduplication: { id: 'combo-dedup', ttl: 60000, extend: true, replace: true, reschedule: false, keepLastIfActive: false },
      telemetry: { metadata: 'meta-Ω', omitContext: true },
    },
  },
  {
    name: 'combo-parent',
    opts: {
      jobId: 'child-1',
      priority: 3,
      attempts: 2,
      backoff: 250,
      removeOnComplete: false,
      removeOnFail: { age: 1.5 },
      keepLogs: 1,
      parent: parent(),
      failParentOnFailure: true,
      telemetry: { metadata: 'm' },
    },
  },
  {
    name: 'combo-delayed-parent-rdof',
    opts: {
      delay: 1,
      attempts: -1,
      lifo: false,
      stackTraceLimit: 2 ** 31,
      parent: parent(),
      removeDependencyOnFailure: true,
    },
  },
];

// Options that Node rejects client-side (before anything is sent to Redis).
// `error` is the exact Error#message bullmq@6.7.6 throws; opts-golden.mjs
// re-checks it on every run. `data` defaults to {} when absent.
export const rejectedCases = [
  {
    name: 'priority-over-limit',
    opts: { priority: 2097152 },
    error: 'Priority should be between 0 and 2097151',
  },
  { name: 'priority-float', opts: { priority: 1.5 }, error: 'Priority should not be float' },
  { name: 'jobid-integer', opts: { jobId: '123' }, error: 'Custom Id cannot be integers' },
  { name: 'jobid-colon', opts: { jobId: 'a:b' }, error: 'Custom Id cannot contain :' },
  { name: 'jobid-zero', opts: { jobId: '0' }, error: "JobId cannot be '0' or start with '0:'" },
  { name: 'jobid-zero-colon', opts: { jobId: '0:a:b' }, error: "JobId cannot be '0' or start with '0:'" },
  {
    name: 'parent-exclusive-options',
    opts: { parent: parent(), failParentOnFailure: true, ignoreDependencyOnFailure: true },
    error: 'The following options cannot be used together: failParentOnFailure, ignoreDependencyOnFailure',
  },
  {
    name: 'parent-exclusive-options-all',
    opts: {
      parent: parent(),
      failParentOnFailure: true,
      continueParentOnFailure: true,
      ignoreDependencyOnFailure: true,
      removeDependencyOnFailure: true,
    },
    error:
      'The following options cannot be used together: removeDependencyOnFailure, failParentOnFailure, continueParentOnFailure, ignoreDependencyOnFailure',
  },
  {
    name: 'dedup-without-id',
    opts: { deduplication: { ttl: 1000 } },
    error: 'Deduplication id must be provided',
  },
  {
    name: 'dedup-with-parent',
    opts: { parent: parent(), deduplication: { id: 'x' } },
    error: 'Deduplication and parent options cannot be used together',
  },
  {
    name: 'backoff-jitter-over-1',
    opts: { backoff: { type: 'fixed', delay: 1000, jitter: 1.5 } },
    error: 'Jitter should be between 0 and 1',
  },
  {
    name: 'backoff-jitter-negative',
    opts: { backoff: { type: 'fixed', delay: 1000, jitter: -0.1 } },
    error: 'Jitter should be between 0 and 1',
  },
  {
    name: 'sizelimit-exceeded',
    opts: { sizeLimit: 10 },
    data: { payload: 'more than ten bytes' },
    error: 'The size of job golden exceeds the limit 10 bytes',
  },
  {
    name: 'debounce-removed',
    opts: { debounce: { id: 'x' } },
    error: 'Debounce option has been removed. Use deduplication option instead',
  },
];

export default corpus;
