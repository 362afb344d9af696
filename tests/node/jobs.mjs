// What the interop scripts' processors share, in one copy so that the scripts (and the Rust
// tests' processors that mirror them) cannot drift apart: the job behaviours more than one
// script runs, and how a run counts jobs that finished for good.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { UnrecoverableError } = require('bullmq');

/** `progress`: reports progress {pct: 50}, logs "first line" and "second line", returns "done". */
export async function progress(job) {
  await job.updateProgress({ pct: 50 });
  await job.log('first line');
  await job.log('second line');
  return 'done';
}

/** `flaky`: throws `boom <name>` while attemptsMade < 2, then returns {recovered: attemptsMade}. */
export function flaky(job) {
  if (job.attemptsMade < 2) throw new Error(`boom ${job.name}`);
  return { recovered: job.attemptsMade };
}

/** `fatal`: throws UnrecoverableError("no retry"), which no retry follows. */
export function fatal() {
  throw new UnrecoverableError('no retry');
}

/**
 * Counts `expect` finishes. `settle()` counts one, `all` resolves once there were `expect`,
 * `finished` is the count so far. `settleFailed` is a `failed` listener that counts only a job
 * that failed for good (unrecoverable, or no attempt left), not one that will be retried.
 */
export function countdown(expect) {
  let finished = 0;
  let done;
  const all = new Promise(resolve => (done = resolve));
  const settle = () => {
    finished += 1;
    if (finished >= expect) done();
  };
  const settleFailed = (job, err) => {
    const final =
      !job ||
      job.finishedOn ||
      err?.name === 'UnrecoverableError' ||
      job.attemptsMade >= (job.opts.attempts || 1);
    if (final) settle();
  };
  return {
    settle,
    settleFailed,
    all,
    get finished() {
      return finished;
    },
  };
}

/**
 * The `fields` of a job as JSON keeps them, in that order: one the job does not have is `null`
 * (JSON.stringify would drop an `undefined`, and the Rust side compares every key).
 */
export function pick(job, fields) {
  return Object.fromEntries(fields.map(field => [field, job[field] ?? null]));
}
