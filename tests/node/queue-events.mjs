#!/usr/bin/env node
// Node.js BullMQ 6.7.6's side of the QueueEvents tests (tests/interop/redis_queue_events.rs).
//
// Usage: PREFIX=… QUEUE=… node queue-events.mjs <op> [args…]
//   listen <lastEventId> <stopEvent>
//         Runs a QueueEvents from lastEventId and prints one JSON line per event it emits,
//         {"event", "args", "id"} (args as Node's listeners get them, "id" the stream id), until
//         the custom event <stopEvent> arrives; then prints {"stopped": true} and exits.
//         Prints {"ready": true} once the reader runs. Exits non-zero after 30 s.
//   publish <eventName> <json fields> [maxEvents]
//         QueueEventsProducer.publishEvent({eventName, ...fields}, maxEvents); prints null.
//   stall
//         Takes the next job with a manual Worker, drops its lock and runs the stalled check
//         twice, so the job is found stalled and moved back to wait (event `stalled`); prints
//         the job id.
//   flow <parentName> <childName>
//         Adds a parent with one child through FlowProducer (event `waiting-children` for the
//         parent); prints [parentId, childId].
//   wait <jobId> <ttlMs>
//         job.waitUntilFinished(queueEvents, ttl); prints {"returnvalue"} or {"error"}.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { QueueEvents, QueueEventsProducer, Worker, FlowProducer, Queue, Job } = require('bullmq');
const IORedis = require('ioredis');

const { PREFIX, QUEUE } = process.env;
const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const connect = () => new IORedis(url, { maxRetriesPerRequest: null });
const [op, ...args] = process.argv.slice(2);
const print = value => process.stdout.write(JSON.stringify(value === undefined ? null : value) + '\n');

async function listen(lastEventId, stopEvent) {
  const connection = connect();
  const events = new QueueEvents(QUEUE, { connection, prefix: PREFIX, lastEventId, autorun: false });
  let stop;
  const stopped = new Promise(resolve => (stop = resolve));
  const emit = events.emit.bind(events);
  events.emit = (event, ...rest) => {
    // `<event>:<jobId>` repeats the event for per-job listeners; the plain one is enough.
    if (!event.includes(':')) {
      if (event === 'drained') {
        print({ event, args: null, id: rest[0] });
      } else if (event === 'error') {
        print({ event, args: String(rest[0]), id: null });
      } else {
        print({ event, args: rest[0], id: rest[1] });
      }
      if (event === stopEvent) stop();
    }
    return emit(event, ...rest);
  };
  const timeout = setTimeout(() => {
    console.error(`queue-events listen: no ${stopEvent} event within 30 s`);
    process.exit(1);
  }, 30_000);
  events.run().catch(err => {
    console.error(err);
    process.exit(1);
  });
  await events.waitUntilReady();
  print({ ready: true });
  await stopped;
  clearTimeout(timeout);
  print({ stopped: true });
  await events.close();
  connection.disconnect();
}

async function publish(eventName, fields, maxEvents) {
  const connection = connect();
  const producer = new QueueEventsProducer(QUEUE, { connection, prefix: PREFIX });
  await producer.publishEvent({ eventName, ...JSON.parse(fields) }, maxEvents ? Number(maxEvents) : undefined);
  await producer.close();
  connection.disconnect();
  print(null);
}

async function stall() {
  const connection = connect();
  const worker = new Worker(QUEUE, null, { connection, prefix: PREFIX, autorun: false });
  const job = await worker.getNextJob('stall-token', { block: false });
  if (!job) throw new Error('no job to stall');
  await connection.del(`${PREFIX}:${QUEUE}:${job.id}:lock`);
  // Each check runs at most once per stalledInterval (the `stalled-check` key, which an
  // earlier worker may have set): the first marks the active jobs, the second moves them.
  for (let i = 0; i < 2; i++) {
    await connection.del(`${PREFIX}:${QUEUE}:stalled-check`);
    await worker.moveStalledJobsToWait();
  }
  await worker.close();
  connection.disconnect();
  print(job.id);
}

async function flow(parentName, childName) {
  const connection = connect();
  const producer = new FlowProducer({ connection, prefix: PREFIX });
  const tree = await producer.add({
    name: parentName,
    queueName: QUEUE,
    data: {},
    children: [{ name: childName, queueName: QUEUE, data: {} }],
  });
  await producer.close();
  connection.disconnect();
  print([tree.job.id, tree.children[0].job.id]);
}

async function wait(jobId, ttl) {
  const connection = connect();
  const queue = new Queue(QUEUE, { connection, prefix: PREFIX });
  const eventsConnection = connect();
  const events = new QueueEvents(QUEUE, { connection: eventsConnection, prefix: PREFIX });
  await events.waitUntilReady();
  const job = await Job.fromId(queue, jobId);
  try {
    print({ returnvalue: await job.waitUntilFinished(events, Number(ttl)) });
  } catch (err) {
    print({ error: err.message });
  }
  await events.close();
  await queue.close();
  eventsConnection.disconnect();
  connection.disconnect();
}

switch (op) {
  case 'listen':
    await listen(args[0], args[1]);
    break;
  case 'publish':
    await publish(args[0], args[1], args[2]);
    break;
  case 'stall':
    await stall();
    break;
  case 'flow':
    await flow(args[0], args[1]);
    break;
  case 'wait':
    await wait(args[0], args[1]);
    break;
  default:
    throw new Error(`unknown op ${op}`);
}
