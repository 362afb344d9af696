// bull-board (its JSON API, as its UI reads it) over two queues of one store: RUST_QUEUE,
// filled and processed by the Rust port, and NODE_QUEUE, which this script fills and processes
// with Node.js BullMQ 6.7.6 the same way (a job "ok" {"n":1} completed with "done", a job
// "fail-one" {"n":2} failed with "boom"). Both are read with Node's own Queue, wrapped in
// bull-board's BullMQAdapter, and bull-board is served by express on a free local port.
//
// Env: STORE (redis | postgres), REDIS_URL and PREFIX, or DATABASE_URL and SCHEMA; RUST_QUEUE,
// NODE_QUEUE. Prints one JSON line: {"rust": {...}, "node": {...}}, each with bull-board's
// `counts` and its `completed` and `failed` job lists.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Queue, Worker, createPostgresBackend } = require("bullmq");
const IORedis = require("ioredis");
const express = require("express");
const { createBullBoard } = require("@bull-board/api");
const { BullMQAdapter } = require("@bull-board/api/bullMQAdapter");
const { ExpressAdapter } = require("@bull-board/express");

const { STORE, REDIS_URL = "redis://127.0.0.1:6379", PREFIX, DATABASE_URL, SCHEMA, RUST_QUEUE, NODE_QUEUE } = process.env;
const timer = setTimeout(() => { console.error("bull-board.mjs timed out"); process.exit(3); }, 60_000);

let redis;
if (STORE !== "postgres") redis = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
function open(name) {
  return STORE === "postgres"
    ? new Queue(name, { connection: { connectionString: DATABASE_URL, schema: SCHEMA } }, createPostgresBackend)
    : new Queue(name, { connection: redis, prefix: PREFIX });
}

const rustQueue = open(RUST_QUEUE);
const nodeQueue = open(NODE_QUEUE);
for (const q of [rustQueue, nodeQueue]) q.on("error", () => {});

// Node's side of the comparison, made the way the Rust test made its own.
await nodeQueue.add("ok", { n: 1 });
await nodeQueue.add("fail-one", { n: 2 });
const processor = async (job) => { if (job.name === "fail-one") throw new Error("boom"); return "done"; };
const worker = STORE === "postgres"
  ? new Worker(NODE_QUEUE, processor, { connection: { connectionString: DATABASE_URL, schema: SCHEMA } }, createPostgresBackend)
  : new Worker(NODE_QUEUE, processor, { connection: redis, prefix: PREFIX });
worker.on("error", () => {});
await new Promise((resolve) => {
  let finished = 0;
  const done = () => { finished += 1; if (finished === 2) resolve(); };
  worker.on("completed", done);
  worker.on("failed", done);
});
await worker.close();

const serverAdapter = new ExpressAdapter();
serverAdapter.setBasePath("/ui");
createBullBoard({ queues: [new BullMQAdapter(rustQueue), new BullMQAdapter(nodeQueue)], serverAdapter });
const app = express();
app.use("/ui", serverAdapter.getRouter());
const server = await new Promise((resolve) => { const s = app.listen(0, "127.0.0.1", () => resolve(s)); });
const base = `http://127.0.0.1:${server.address().port}/ui/api/queues`;

async function board(name) {
  const out = {};
  for (const status of ["completed", "failed"]) {
    const answer = await fetch(`${base}?activeQueue=${encodeURIComponent(name)}&status=${status}&page=1&jobsPerPage=10`);
    if (!answer.ok) throw new Error(`bull-board answered ${answer.status}: ${await answer.text()}`);
    const { queues } = await answer.json();
    const queue = queues.find((q) => q.name === name);
    if (!queue) throw new Error(`bull-board does not list ${name}: ${JSON.stringify(queues.map((q) => q.name))}`);
    out.counts = queue.counts;
    out.isPaused = queue.isPaused;
    out[status] = queue.jobs;
  }
  return out;
}

try {
  const result = { rust: await board(RUST_QUEUE), node: await board(NODE_QUEUE) };
  console.log(JSON.stringify(result));
} finally {
  server.close();
  clearTimeout(timer);
  await rustQueue.close();
  await nodeQueue.close();
  if (redis) redis.disconnect();
}
