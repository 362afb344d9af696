#!/usr/bin/env bash
# Worker throughput of bullmq-rs (ours), the official Rust port (bullmq-official 1.2.5) and
# Node.js BullMQ 6.7.6, on the same Redis in the same run, printed as markdown tables.
#
#   benches/compare-worker.sh
#
# Builds ours (`cargo bench --bench redis_worker --no-run`) and the official port's harness
# (`cargo build --release --manifest-path benches/official/Cargo.toml`, binary `worker`), then
# runs the built binaries and `node benches/node/worker.mjs` one mode at a time, interleaved:
# for each round, for each mode, the three implementations one after the other (their order
# rotating from round to round), so that a noisy stretch of the machine hits all three alike.
# The tables show each figure's median over the rounds and the issue's targets, met or
# missed (benches/compare-worker-table.py). The raw JSON lines and the load average before
# each run are kept in target/bench-worker/.
#
# Env: BENCH_JOBS (20000 per mode), BENCH_ROUNDS (5), BENCH_MODES (all:
# instant-c{1,10,100,500}-{keep,remove},sleep10ms-c100); BENCH_WARMUP and REDIS_URL are passed
# on to the three harnesses. Needs `npm ci --prefix tests/node` and Python 3.
#
#   benches/compare-worker.sh --instructions [--mode NAME[,NAME]]
#
# counts instead the client's instructions per processed job under valgrind (callgrind), ours
# and the official port's side by side (default modes instant-c{1,10,100}-keep; see
# benches/support/instructions.rs for BENCH_JOBS, BENCH_ROUNDS and BENCH_CALLGRIND_DIR). The
# count does not depend on the machine's load; use a private `redis-server --save ''`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

rounds=${BENCH_ROUNDS:-5}
all_modes=""
for c in 1 10 100 500; do all_modes+="instant-c$c-keep,instant-c$c-remove,"; done
modes=${BENCH_MODES:-${all_modes}sleep10ms-c100}
counted_jobs=${BENCH_JOBS:-2000}
export BENCH_JOBS=${BENCH_JOBS:-20000}

ours=$(bench_executable redis_worker)
official=$(official_executable worker)

if [[ ${1:-} == --instructions ]]; then
  BENCH_JOBS=$counted_jobs BENCH_OFFICIAL_WORKER=$official exec "$ours" "$@"
fi

three_way worker "$rounds" "$modes"
