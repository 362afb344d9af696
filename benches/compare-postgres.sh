#!/usr/bin/env bash
# Add and worker throughput of bullmq-rs (ours) and Node.js BullMQ 6.7.6 on its own PostgreSQL
# backend, on the same PostgreSQL server in the same run, printed as a markdown table.
#
#   benches/compare-postgres.sh          # BENCH_JOBS jobs per mode, BENCH_ROUNDS rounds
#   benches/compare-postgres.sh --test   # smoke run: one round of 200 jobs, no warm-up
#
# Builds ours (`cargo bench --bench postgres_add --bench postgres_worker --features postgres
# --no-run`), then runs the built binaries and `node benches/node/pg-{add,worker}.mjs` one mode
# at a time, interleaved: for each round, for each mode, ours and Node.js one after the other
# (which one goes first alternating from round to round), so that a noisy stretch of the
# machine hits both alike. Each run migrates a schema of its own and drops it afterwards. The
# table shows per mode the medians over the rounds of jobs/s, client CPU µs per job and
# PostgreSQL CPU µs per job (the server processes serving the harness: see
# benches/support/postgres.rs), ours / Node.js, against the issue's targets (jobs/s >= 1.1x,
# client CPU <= 0.5x, PostgreSQL CPU <= 1x). The raw JSON lines and the load average before
# each run are kept in target/bench-postgres/.
#
# Env: BENCH_JOBS (5000 per mode), BENCH_ROUNDS (3), BENCH_ADD_MODES
# (sequential,concurrent8,bulk1000), BENCH_WORKER_MODES
# (instant-c1-keep,instant-c10-keep,instant-c100-keep), BENCH_WARMUP (2000) and DATABASE_URL
# (postgres://postgres@127.0.0.1:5432/test: a local server over TCP, whose processes' CPU
# time /proc shows) passed on to the harnesses. Needs `npm ci --prefix tests/node` and
# Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

test_flag=()
rounds=${BENCH_ROUNDS:-3}
if [[ ${1:-} == --test ]]; then
  test_flag=(--test)
  rounds=1
fi
add_modes=${BENCH_ADD_MODES:-sequential,concurrent8,bulk1000}
worker_modes=${BENCH_WORKER_MODES:-instant-c1-keep,instant-c10-keep,instant-c100-keep}
export BENCH_JOBS=${BENCH_JOBS:-5000}
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}

ours_add=$(bench_executable postgres_add --features postgres)
ours_worker=$(bench_executable postgres_worker --features postgres)

bench_files postgres

run() { # impl bench mode
  case $1-$2 in
    bullmq-rs-add) "$ours_add" --mode "$3" "${test_flag[@]}" ;;
    bullmq-rs-worker) "$ours_worker" --mode "$3" "${test_flag[@]}" ;;
    bullmq-node-add) node benches/node/pg-add.mjs --mode "$3" "${test_flag[@]}" ;;
    bullmq-node-worker) node benches/node/pg-worker.mjs --mode "$3" "${test_flag[@]}" ;;
  esac
}

for ((round = 0; round < rounds; round++)); do
  if ((round % 2 == 0)); then order="bullmq-node bullmq-rs"; else order="bullmq-rs bullmq-node"; fi
  for bench in add worker; do
    if [[ $bench == add ]]; then modes=$add_modes; else modes=$worker_modes; fi
    for mode in ${modes//,/ }; do
      for impl in $order; do
        logged_run "$((round + 1))/$rounds" "$mode" "$impl" "$results" "$loads" "$impl" "$bench" "$mode"
      done
    done
  done
done

echo "raw results: $results; load averages: $loads" >&2
echo "load average (1 min) before the runs: $(load_summary "$loads")"
echo "jobs per mode: $(python3 -c 'import json,sys; print(sorted({json.loads(l)["jobs"] for l in open(sys.argv[1]) if l.strip()}))' "$results"); rounds: $rounds"
echo
python3 benches/compare_rows.py "$results" \
  'jobs_per_sec:>=:1.1' 'client_cpu_us_per_job:<=:0.5' 'pg_cpu_us_per_job:<=:1'
