#!/usr/bin/env bash
# Add throughput of bullmq-rs (ours), the official Rust port (bullmq-official 1.2.5) and
# Node.js BullMQ 6.7.6, on the same Redis in the same run, printed as a markdown table.
#
#   benches/compare-add.sh
#
# Builds ours (`cargo bench --bench redis_add --no-run`) and the official port's harness
# (`cargo build --release --manifest-path benches/official/Cargo.toml`), then runs the built
# binaries and `node benches/node/add.mjs` one mode at a time, interleaved: for each round,
# for each mode, the three implementations one after the other (their order rotating from
# round to round), so that a noisy stretch of the machine hits all three alike. The table
# shows each figure's median over the rounds. The raw JSON lines are kept in
# target/bench-add/.
#
# Env: BENCH_JOBS (20000 per mode), BENCH_ROUNDS (5), BENCH_MODES
# (sequential,concurrent8,bulk1000); BENCH_WARMUP and REDIS_URL are passed on to the three
# harnesses, BENCH_RUNTIME and BENCH_TASK to the two Rust ones. Needs
# `npm ci --prefix tests/node` and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

rounds=${BENCH_ROUNDS:-5}
modes=${BENCH_MODES:-sequential,concurrent8,bulk1000}
export BENCH_JOBS=${BENCH_JOBS:-20000}

ours=$(bench_executable redis_add)
official=$(official_executable bullmq-official-bench)

mkdir -p target/bench-add
results=target/bench-add/results-$(date +%Y%m%dT%H%M%S).jsonl
: >"$results"

run() { run_peer "$1" "$2" benches/node/add.mjs; }

interleave "$rounds" "$modes" "$results"

echo "raw results: $results" >&2
python3 benches/compare-add-table.py "$results"
