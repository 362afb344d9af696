#!/usr/bin/env bash
# Job scheduler upserts of bullmq-rs against Node.js BullMQ 6.7.0 on the same Redis in the same
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
rounds=${BENCH_ROUNDS:-3}

echo "building bullmq-rs (cargo bench --no-run)..." >&2
ours=$(cargo bench --bench redis_scheduler --features scheduler --no-run --message-format=json-render-diagnostics |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "redis_scheduler" and m.get("executable"):
        print(m["executable"])
')
mkdir -p target/bench-scheduler
results=target/bench-scheduler/results-$(date +%Y%m%dT%H%M%S).jsonl
: >"$results"
for ((round = 0; round < rounds; round++)); do
  if ((round % 2 == 0)); then order="node rs"; else order="rs node"; fi
  for impl in $order; do
    echo "round $((round + 1))/$rounds: $impl" >&2
    case $impl in
      rs) "$ours" | tee -a "$results" ;;
      node) node benches/node/scheduler.mjs | tee -a "$results" ;;
    esac
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\n| mode | bullmq-rs upserts/s | Node 6.7.0 upserts/s | ratio |\n|---|---|---|---|")
for mode in sorted({r["mode"] for r in rows}, reverse=True):
    med = lambda impl: statistics.median(r["upserts_per_sec"] for r in rows if r["mode"] == mode and r["impl"] == impl)
    ours, node = med("bullmq-rs"), med("bullmq-node")
    print(f"| {mode} | {ours:,.0f} | {node:,.0f} | {ours / node:.2f}x |")
PY
