// The Node.js side of `cargo run --example quickstart`: adds jobs with Node.js BullMQ 6.7.0 to
// the queue the Rust worker processes, then exits.
//
//   node quickstart-producer.mjs <queue> <count>     (REDIS_URL, default redis://127.0.0.1:6379)
import { Queue } from 'bullmq';

const [queueName = 'quickstart', countText = '5'] = process.argv.slice(2);
const url = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const connection = {
  host: url.hostname,
  port: Number(url.port || 6379),
  username: url.username || undefined,
  password: url.password ? decodeURIComponent(url.password) : undefined,
  db: Number(url.pathname.slice(1) || 0),
};

const queue = new Queue(queueName, { connection });
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
