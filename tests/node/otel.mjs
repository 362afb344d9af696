#!/usr/bin/env node
// Node.js BullMQ 6.7.6 with `bullmq-otel` and an in-memory OpenTelemetry span exporter, for
// tests/interop/otel.rs: one side of a trace that crosses between the runtimes inside a job.
//
// Env: BACKEND (redis | postgres), QUEUE; Redis: REDIS_URL, PREFIX; PostgreSQL: DATABASE_URL,
// SCHEMA. Usage: node otel.mjs <op> [args…]
//   add <job name>   Queue#add under telemetry; prints {jobId, spans}
//   upsert <id>      Queue#upsertJobScheduler(<id>, every hour, job name <id>) under
//                    telemetry; prints {jobId, spans}
//   work <count>     a Worker under telemetry until <count> jobs completed; prints {spans}
//   produce          the producer set of the span comparison (see below); prints {spans}
//   consume <count>  a Worker of the comparison's processor until <count> jobs finished, then
//                    pause(true), resume(), close(); prints {spans}
//   admin            the Queue administration set on QUEUE (trimEvents on Redis only);
//                    prints {spans}
//   manual           add two jobs, take each with worker.getNextJob(token) by hand, complete
//                    the first (moveToCompleted) and fail the second (moveToFailed); prints
//                    {spans}
// The producer set: add ok, flaky (2 attempts), backoff (2 attempts, fixed 10 ms), fatal,
// slow, limited; addBulk [b1, b2]; addFlow root (no opts) with one child (opts {}); addBulk of
// flows f1, f2 (no opts)
// (12 jobs). The comparison's processor: flaky fails its first attempt, backoff its first,
// fatal every one, limited calls worker.rateLimit(10) and throws RateLimitError once, slow
// waits for a lock renewal; everything else returns 'ok'.
// Each span printed: {name, kind, traceId, spanId, parentSpanId, attributes, types, events,
// status}: types maps each attribute to string | number | boolean | string[], events are
// {name, types}, status is the status code.
// Exits non-zero on any error or after TIMEOUT ms (default 30 s).
import { createRequire } from 'node:module';
import { countdown } from './jobs.mjs';

const require = createRequire(import.meta.url);
const { Queue, Worker, FlowProducer, createPostgresBackend } = require('bullmq');
const { BullMQOtel } = require('bullmq-otel');
const { trace, context, propagation } = require('@opentelemetry/api');
const {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');

const {
  BACKEND = 'redis',
  QUEUE,
  PREFIX = 'bull',
  REDIS_URL = 'redis://127.0.0.1:6379',
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test',
  SCHEMA,
  TIMEOUT = '30000',
} = process.env;
const [op, arg] = process.argv.slice(2);
const timer = setTimeout(() => {
  console.error(`otel ${op} timed out`);
  process.exit(3);
}, Number(TIMEOUT));

// The setup an application makes: a tracer provider, async context, W3C propagation.
const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const telemetry = new BullMQOtel({ tracerName: 'bullmq' });

const options = () => {
  if (BACKEND === 'postgres') {
    return [
      { connection: { connectionString: DATABASE_URL, schema: SCHEMA, migrate: true }, telemetry },
      createPostgresBackend,
    ];
  }
  const url = new URL(REDIS_URL);
  return [
    {
      connection: {
        host: url.hostname,
        port: Number(url.port || 6379),
        username: decodeURIComponent(url.username) || undefined,
        password: decodeURIComponent(url.password) || undefined,
        db: Number(url.pathname.slice(1) || 0),
        maxRetriesPerRequest: null,
      },
      prefix: PREFIX,
      telemetry,
    },
  ];
};

const typeOf = value =>
  Array.isArray(value) ? `${typeof value[0] === 'undefined' ? 'string' : typeof value[0]}[]` : typeof value;
const types = attributes =>
  Object.fromEntries(Object.entries(attributes ?? {}).map(([k, v]) => [k, typeOf(v)]));

const spans = () =>
  exporter.getFinishedSpans().map(s => ({
    name: s.name,
    kind: s.kind,
    traceId: s.spanContext().traceId,
    spanId: s.spanContext().spanId,
    parentSpanId: s.parentSpanContext?.spanId ?? s.parentSpanId ?? null,
    attributes: s.attributes,
    types: types(s.attributes),
    events: s.events.map(e => ({ name: e.name, types: types(e.attributes) })),
    status: s.status.code,
  }));

const print = value => process.stdout.write(JSON.stringify(value) + '\n');

if (op === 'add') {
  const [opts, backend] = options();
  const queue = new Queue(QUEUE, opts, backend);
  const job = await queue.add(arg, { from: 'node' });
  await queue.close();
  print({ jobId: job.id, spans: spans() });
} else if (op === 'upsert') {
  const [opts, backend] = options();
  const queue = new Queue(QUEUE, opts, backend);
  const job = await queue.upsertJobScheduler(arg, { every: 3_600_000 }, { name: arg });
  await queue.close();
  print({ jobId: job.id, spans: spans() });
} else if (op === 'work') {
  const [opts, backend] = options();
  const count = countdown(Number(arg));
  const worker = new Worker(QUEUE, async () => 'ok', opts, backend);
  worker.on('completed', count.settle);
  worker.on('error', err => console.error(err));
  await count.all;
  await worker.close();
  print({ spans: spans() });
} else if (op === 'produce') {
  const [opts, backend] = options();
  const queue = new Queue(QUEUE, opts, backend);
  const once = { attempts: 2 };
  await queue.add('ok', { n: 1 });
  await queue.add('flaky', {}, once);
  await queue.add('backoff', {}, { attempts: 2, backoff: { type: 'fixed', delay: 10 } });
  await queue.add('fatal', {});
  await queue.add('slow', {});
  await queue.add('limited', {});
  await queue.addBulk([
    { name: 'b1', data: {} },
    { name: 'b2', data: {} },
  ]);
  const flows = new FlowProducer(opts, backend);
  await flows.add({
    name: 'root',
    queueName: QUEUE,
    data: {},
    children: [{ name: 'child', queueName: QUEUE, data: {}, opts: {} }],
  });
  await flows.addBulk([
    { name: 'f1', queueName: QUEUE, data: {} },
    { name: 'f2', queueName: QUEUE, data: {} },
  ]);
  await flows.close();
  // Not `close()`: its `close` span has no counterpart (our `Queue` has no close).
  await queue.disconnect();
  print({ spans: spans() });
} else if (op === 'consume') {
  const [opts, backend] = options();
  const count = countdown(Number(arg));
  let renewed;
  const lockRenewed = new Promise(resolve => (renewed = resolve));
  const limitedOnce = new Set();
  let worker;
  worker = new Worker(
    QUEUE,
    async job => {
      switch (job.name) {
        case 'flaky':
        case 'backoff':
          if (job.attemptsMade === 0) throw new Error('first try fails');
          return 'ok';
        case 'fatal':
          throw new Error('no way');
        case 'limited':
          if (!limitedOnce.has(job.id)) {
            limitedOnce.add(job.id);
            await worker.rateLimit(10);
            throw Worker.RateLimitError();
          }
          return 'ok';
        case 'slow':
          await lockRenewed;
          return 'ok';
        default:
          return 'ok';
      }
    },
    { ...opts, lockDuration: 1000 },
    backend,
  );
  worker.on('locksRenewed', () => renewed());
  worker.on('completed', count.settle);
  worker.on('failed', job => {
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) count.settle();
  });
  worker.on('error', err => console.error(err));
  await count.all;
  await worker.pause(true);
  await worker.resume();
  await worker.close();
  print({ spans: spans() });
} else if (op === 'admin') {
  const [opts, backend] = options();
  const queue = new Queue(QUEUE, opts, backend);
  const victim = await queue.add('victim', {});
  const progressed = await queue.add('progressed', {});
  await queue.pause();
  await queue.resume();
  await queue.updateJobProgress(progressed.id, 50);
  await queue.remove(victim.id);
  await queue.removeDeduplicationKey('dedup');
  await queue.clean(0, 0, 'completed');
  // Not on PostgreSQL: upstream's backend has no trimEvents there.
  if (BACKEND !== 'postgres') await queue.trimEvents(100);
  await queue.retryJobs({ count: 10, state: 'failed', timestamp: Date.now() });
  await queue.promoteJobs({ count: 10 });
  await queue.rateLimit(1);
  await queue.drain(true);
  await queue.obliterate({ force: true });
  await queue.disconnect();
  print({ spans: spans() });
} else if (op === 'manual') {
  const [opts, backend] = options();
  const queue = new Queue(QUEUE, opts, backend);
  await queue.add('manual', {});
  await queue.add('manual-fail', {});
  const worker = new Worker(QUEUE, null, { ...opts, autorun: false }, backend);
  const job = await worker.getNextJob('manual-token');
  if (!job) throw new Error('no job for getNextJob');
  await job.moveToCompleted('ok', 'manual-token', false);
  const failing = await worker.getNextJob('manual-token');
  if (!failing) throw new Error('no second job for getNextJob');
  await failing.moveToFailed(new Error('no'), 'manual-token', false);
  await queue.disconnect();
  await worker.close();
  print({ spans: spans() });
} else {
  console.error(`unknown op ${op}`);
  process.exit(2);
}
clearTimeout(timer);
