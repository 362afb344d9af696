#!/usr/bin/env bash
# Job scheduler upserts of bullmq-rs against Node.js BullMQ 6.7.6 on the same Redis in the same
# run: 1,000 distinct schedulers upserted one awaited call at a time, per mode (`every`, `cron`),
# the two implementations alternating over BENCH_ROUNDS rounds; prints each run's JSON line and,
# per mode, the median upserts/s of each and their ratio (ours / Node).
#
#   benches/compare-scheduler.sh
#
# Env: BENCH_SCHEDULERS (1000), BENCH_ROUNDS (3), REDIS_URL. Needs `npm ci --prefix tests/node`
# and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

against_node redis_scheduler scheduler benches/node/scheduler.mjs upserts_per_sec upserts/s
