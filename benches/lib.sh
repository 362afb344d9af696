# Shared by the compare-*.sh scripts, which source it from the repository's root after
# `set -euo pipefail`.

# bench_executable BENCH [CARGO_ARGS...]: builds our bench target BENCH (`cargo bench
# --no-run`, with CARGO_ARGS such as `--features flow`) and prints its executable's path.
bench_executable() {
  local bench=$1
  shift
  echo "building bullmq-rs (cargo bench --no-run)..." >&2
  cargo bench --bench "$bench" "$@" --no-run --message-format=json-render-diagnostics |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == sys.argv[1] and m.get("executable"):
        print(m["executable"])
' "$bench"
}

# bench_files NAME: makes target/bench-NAME/ and sets `results` and `loads` to new, empty
# files in it, named for the time of the run.
bench_files() {
  local stamp
  stamp=$(date +%Y%m%dT%H%M%S)
  mkdir -p "target/bench-$1"
  results=target/bench-$1/results-$stamp.jsonl
  loads=target/bench-$1/load-$stamp.txt
  : >"$results"
  : >"$loads"
}

# against_node BENCH FEATURE NODE_SCRIPT FIELD UNIT: runs our bench BENCH (built with
# FEATURE) and `node NODE_SCRIPT` alternately over BENCH_ROUNDS (3) rounds, printing each JSON
# line (kept in target/bench-FEATURE/), then per mode the median FIELD of each and their ratio
# (ours / Node), headed with UNIT.
against_node() {
  local bench=$1 feature=$2 script=$3 field=$4 unit=$5
  local rounds=${BENCH_ROUNDS:-3} ours results round order impl
  ours=$(bench_executable "$bench" --features "$feature")
  mkdir -p "target/bench-$feature"
  results=target/bench-$feature/results-$(date +%Y%m%dT%H%M%S).jsonl
  : >"$results"
  for ((round = 0; round < rounds; round++)); do
    if ((round % 2 == 0)); then order="node rs"; else order="rs node"; fi
    for impl in $order; do
      echo "round $((round + 1))/$rounds: $impl" >&2
      case $impl in
        rs) "$ours" | tee -a "$results" ;;
        node) node "$script" | tee -a "$results" ;;
      esac
    done
  done
  python3 - "$results" "$field" "$unit" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
field, unit = sys.argv[2], sys.argv[3]
print(f"\n| mode | bullmq-rs {unit} | Node 6.7.6 {unit} | ratio |\n|---|---|---|---|")
for mode in sorted({r["mode"] for r in rows}, reverse=True):
    med = lambda impl: statistics.median(r[field] for r in rows if r["mode"] == mode and r["impl"] == impl)
    ours, node = med("bullmq-rs"), med("bullmq-node")
    print(f"| {mode} | {ours:,.0f} | {node:,.0f} | {ours / node:.2f}x |")
PY
}

# interleave ROUNDS MODES RESULTS [LOADS]: for each round, for each mode of the
# comma-separated MODES, runs `run IMPL MODE` (the caller's function) for bullmq-node,
# bullmq-official and bullmq-rs, their order rotating from round to round so that a noisy
# stretch of the machine hits all three alike; appends the JSON lines to RESULTS (echoing them
# on stderr) and, given LOADS, the load average before each run to that file.
interleave() {
  local rounds=$1 modes=$2 results=$3 loads=${4:-} round mode k impl
  local impls=(bullmq-node bullmq-official bullmq-rs)
  for ((round = 0; round < rounds; round++)); do
    for mode in ${modes//,/ }; do
      for ((k = 0; k < ${#impls[@]}; k++)); do
        impl=${impls[$(((k + round) % ${#impls[@]}))]}
        if [[ -n $loads ]]; then
          echo "$(date +%T) $mode $impl load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$loads"
        fi
        echo "round $((round + 1))/$rounds: $mode, $impl" >&2
        run "$impl" "$mode" | tee -a "$results" >&2
      done
    done
  done
}
