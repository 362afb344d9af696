#!/usr/bin/env bash
# Pickup latency of bullmq-rs (ours), the official Rust port (bullmq-official 1.2.5) and
# Node.js BullMQ 6.7.6 at fixed offered loads (100, 1,000 and 10,000 jobs/s, a worker at
# concurrency 10), on the same Redis in the same run, printed as a markdown table.
#
#   benches/compare-pickup.sh
#
# Builds ours (`cargo bench --bench redis_pickup --no-run`) and the official port's harness
# (`cargo build --release --manifest-path benches/official/Cargo.toml`, binary `pickup`), then
# runs the built binaries and `node benches/node/pickup.mjs` one mode at a time, interleaved:
# for each round, for each mode, the three implementations one after the other (their order
# rotating from round to round), so that a noisy stretch of the machine hits all three alike.
# The table (benches/compare-pickup-table.py) gives per mode p50, p99 and p99.9 (ms) of each,
# as the median over the rounds with its range (min–max), and the ratios ours ÷ Node and
# ours ÷ official. The raw JSON lines and the load average before each run are kept in
# target/bench-pickup/. Wall-clock figures: run it on a quiet machine.
#
# Env: BENCH_ROUNDS (3), BENCH_MODES (rate100-c10,rate1000-c10,rate10000-c10); BENCH_SECS and
# REDIS_URL are passed on to the three harnesses. Needs `npm ci --prefix tests/node` and
# Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

rounds=${BENCH_ROUNDS:-3}
modes=${BENCH_MODES:-rate100-c10,rate1000-c10,rate10000-c10}

ours=$(bench_executable redis_pickup)
official=$(official_executable pickup)

three_way pickup "$rounds" "$modes"
