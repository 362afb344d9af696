#!/usr/bin/env bash
# Flow creation of bullmq-rs against Node.js BullMQ 6.7.6 on the same Redis in the same run:
# 1,000 flows of a parent with 10 children, per mode (sequential adds, addBulk of 100 trees),
# the two implementations alternating over BENCH_ROUNDS rounds; prints each run's JSON line
# and, per mode, the median flows/s of each and their ratio (ours / Node).
#
#   benches/compare-flow.sh
#
# Env: BENCH_FLOWS (1000), BENCH_ROUNDS (3), REDIS_URL. Needs `npm ci --prefix tests/node`
# and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

against_node redis_flow flow benches/node/flow.mjs flows_per_sec flows/s
