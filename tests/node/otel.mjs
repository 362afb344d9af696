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
// Each span printed: {name, kind, traceId, spanId, parentSpanId, attributes}.
// Exits non-zero on any error or after TIMEOUT ms (default 30 s).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Queue, Worker, createPostgresBackend } = require('bullmq');
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

const spans = () =>
  exporter.getFinishedSpans().map(s => ({
    name: s.name,
    kind: s.kind,
    traceId: s.spanContext().traceId,
    spanId: s.spanContext().spanId,
    parentSpanId: s.parentSpanContext?.spanId ?? s.parentSpanId ?? null,
    attributes: s.attributes,
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
  const expect = Number(arg);
  let completed = 0;
  let done;
  const allDone = new Promise(resolve => (done = resolve));
  const worker = new Worker(QUEUE, async () => 'ok', opts, backend);
  worker.on('completed', () => {
    completed += 1;
    if (completed >= expect) done();
  });
  worker.on('error', err => console.error(err));
  await allDone;
  await worker.close();
  print({ spans: spans() });
} else {
  console.error(`unknown op ${op}`);
  process.exit(2);
}
clearTimeout(timer);
