#!/usr/bin/env bash
# A fleet of workers in one process (issue 21): bullmq-rs (benches/redis_fleet.rs) against
# Node.js BullMQ 6.7.6 (benches/node/fleet.mjs), on a private Redis, printed as markdown
# tables.
#
#   benches/compare-fleet.sh
#
# Builds ours (`cargo bench --bench redis_fleet --no-run`), starts a private `redis-server
# --save ''` on a free loopback port (stopped when the script ends; nothing else connects to
# it, so its `connected_clients` counts the harness's connections alone), then, round after
# round, runs every mode of both harnesses: busy N = 1, 5, 10 and idle N = 1, 10, 100, own
# backends then shared ones, ours and Node's one after the other, their order swapping from
# round to round so that a noisy stretch of the machine hits both alike. The tables
# (benches/compare-fleet-table.py) show medians with [min–max], the ratios per round
# (ours ÷ Node) and the goals: at the Redis ceiling from N = 1, at most 100 KB per added idle
# worker. The raw JSON lines and the load average before each run are kept in
# target/bench-fleet/.
#
# Env: BENCH_ROUNDS (5), BENCH_JOBS (20000 per busy run), BENCH_WARMUP (2000),
# BENCH_SHARING ("own shared"), BENCH_BUSY_WORKERS ("1 5 10"), BENCH_IDLE_WORKERS
# ("1 10 100"). Needs redis-server, Python 3 and `npm ci --prefix tests/node`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

rounds=${BENCH_ROUNDS:-5}
sharing=${BENCH_SHARING:-own shared}
busy_workers=${BENCH_BUSY_WORKERS:-1 5 10}
idle_workers=${BENCH_IDLE_WORKERS:-1 10 100}
export BENCH_JOBS=${BENCH_JOBS:-20000}

ours=$(bench_executable redis_fleet)

private_redis redis-server

bench_files fleet

run() { # impl kind workers
  case $1 in
    bullmq-rs) "$ours" --mode "$2" --workers "$3" ;;
    bullmq-node) node benches/node/fleet.mjs --mode "$2" --workers "$3" ;;
  esac
}

for ((round = 0; round < rounds; round++)); do
  if ((round % 2 == 0)); then order="bullmq-node bullmq-rs"; else order="bullmq-rs bullmq-node"; fi
  for share in $sharing; do
    for phase in busy idle; do
      if [[ $phase == busy ]]; then counts=$busy_workers; else counts=$idle_workers; fi
      for n in $counts; do
        for impl in $order; do
          logged_run "$((round + 1))/$rounds" "$phase-w$n-$share" "$impl" "$results" "$loads" \
            "$impl" "$phase-$share" "$n"
        done
      done
    done
  done
done

echo "raw results: $results; load averages: $loads" >&2
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(redis-server --version | cut -d' ' -f3), node $(node --version)"
echo "load average (1 min) before the runs: $(load_summary "$loads")"
echo
python3 benches/compare-fleet-table.py "$results"
