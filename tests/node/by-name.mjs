// The processor two interop scripts share (process-jobs.mjs on Redis, pg-interop.mjs on
// PostgreSQL): what a job does depends on its name, as in the Rust tests' processor.
import { progress, flaky, fatal } from './jobs.mjs';

/**
 * Runs `job` by its name: `ok` returns {double: data.i * 2} (i defaults to 0), `progress`,
 * `flaky` and `fatal` as in jobs.mjs, `fail` throws `boom <data.i>` on every attempt; any
 * other name is `other(job)`'s.
 */
export async function byName(job, other) {
  switch (job.name) {
    case 'ok':
      return { double: (job.data.i ?? 0) * 2 };
    case 'progress':
      return progress(job);
    case 'flaky':
      return flaky(job);
    case 'fail':
      throw new Error(`boom ${job.data.i}`);
    case 'fatal':
      return fatal();
    default:
      return other(job);
  }
}
