// The Node.js side of `cargo run --example quickstart`: adds jobs with Node.js BullMQ 6.7.6 to
// the queue the Rust worker processes, then exits.
//
//   node quickstart-producer.mjs <queue> <count>
//
// On Redis at REDIS_URL (default redis://127.0.0.1:6379); on PostgreSQL when DATABASE_URL is
// set (schema `bullmq`), through BullMQ's own PostgreSQL backend.
import { Queue, createPostgresBackend } from 'bullmq';

const [queueName = 'quickstart', countText = '5'] = process.argv.slice(2);

function redisConnection() {
  const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  return {
    host: url.hostname,
    port: Number(url.port || 6379),
    username: url.username || undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: Number(url.pathname.slice(1) || 0),
  };
}

const queue = process.env.DATABASE_URL
  ? new Queue(
      queueName,
      { connection: { connectionString: process.env.DATABASE_URL, migrate: true } },
      createPostgresBackend,
    )
  : new Queue(queueName, { connection: redisConnection() });
const count = Number(countText);
for (let i = 1; i <= count; i++) {
  const job = await queue.add(
    'resize',
    { image: `photo-${i}.jpg`, width: 320 * i },
    { attempts: 3, backoff: { type: 'exponential', delay: 500 } },
  );
  console.log(`node: added job ${job.id} (${JSON.stringify(job.data)})`);
}
await queue.close();
