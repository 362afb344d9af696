#!/usr/bin/env bash
# Pickup latency of bullmq-rs (ours) and Node.js BullMQ 6.7.6 at fixed offered loads (100,
# 1,000 and 10,000 jobs/s, a worker at concurrency 10), on the same Redis in the same run.
#
#   benches/compare-pickup.sh
#
# Builds `cargo bench --bench redis_pickup --no-run`, then runs it and
# `node benches/node/pickup.mjs` alternately over BENCH_ROUNDS (3) rounds (which goes first
# alternating), one mode at a time, and prints per mode the medians over the rounds of p50,
# p99 and p99.9 (ms) with ours / Node.js. The raw lines are kept in target/bench-pickup/.
# Wall-clock figures: run it on a quiet machine. Env: BENCH_ROUNDS, BENCH_MODES
# (rate100-c10,rate1000-c10,rate10000-c10), BENCH_SECS and REDIS_URL (passed on). Needs
# `npm ci --prefix tests/node` and Python 3.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

rounds=${BENCH_ROUNDS:-3}
modes=${BENCH_MODES:-rate100-c10,rate1000-c10,rate10000-c10}
ours=$(bench_executable redis_pickup)
mkdir -p target/bench-pickup
results=target/bench-pickup/results-$(date +%Y%m%dT%H%M%S).jsonl
: >"$results"
for ((round = 0; round < rounds; round++)); do
  for mode in ${modes//,/ }; do
    if ((round % 2 == 0)); then order="node rs"; else order="rs node"; fi
    for impl in $order; do
      echo "round $((round + 1))/$rounds: $mode, $impl" >&2
      case $impl in
        rs) "$ours" --mode "$mode" | tee -a "$results" >&2 ;;
        node) node benches/node/pickup.mjs --mode "$mode" | tee -a "$results" >&2 ;;
      esac
    done
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| mode | ours p50 / p99 / p99.9 ms | Node p50 / p99 / p99.9 ms | ours ÷ Node (p50, p99) |")
print("|---|---|---|---|")
for mode in sorted({r["mode"] for r in rows}, key=lambda m: int(m[4:].split("-")[0])):
    def med(impl, f):
        return statistics.median(r[f] for r in rows if r["mode"] == mode and r["impl"] == impl)
    o = [med("bullmq-rs", f) for f in ("p50_ms", "p99_ms", "p999_ms")]
    n = [med("bullmq-node", f) for f in ("p50_ms", "p99_ms", "p999_ms")]
    print(f"| {mode} | {o[0]:.2f} / {o[1]:.2f} / {o[2]:.2f} | {n[0]:.2f} / {n[1]:.2f} / {n[2]:.2f} "
          f"| {o[0] / n[0]:.2f}x, {o[1] / n[1]:.2f}x |")
PY
