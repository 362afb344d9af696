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

# official_executable BIN: builds BIN, a binary of the official port's harness project
# (benches/official, `cargo build --release`), and prints its executable's path.
official_executable() {
  echo "building bullmq-official (cargo build --release)..." >&2
  cargo build --release --quiet --manifest-path benches/official/Cargo.toml \
    --target-dir benches/official/target --bin "$1"
  echo "benches/official/target/release/$1"
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

# logged_run ROUND LABEL IMPL RESULTS LOADS ARGS...: runs `run ARGS...` (the caller's
# function), appending its JSON lines to RESULTS (echoed on stderr) and, when LOADS is not
# empty, first the load average to that file, under "LABEL IMPL"; says on stderr which ROUND
# ("2/5") and run it is.
logged_run() {
  local at=$1 label=$2 who=$3 out=$4 log=$5
  shift 5
  if [[ -n $log ]]; then
    echo "$(date +%T) $label $who load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"
  fi
  echo "round $at: $label, $who" >&2
  run "$@" | tee -a "$out" >&2
}

# load_summary LOADS: the min, median and max of the 1-minute load averages logged_run wrote
# to LOADS.
load_summary() {
  cut -d" " -f5 "$1" | sort -n | python3 -c '
import statistics, sys
v = [float(x) for x in sys.stdin.read().split()]
print(f"min {min(v):.2f}, median {statistics.median(v):.2f}, max {max(v):.2f}")'
}

# run_peer IMPL MODE NODE_SCRIPT: runs MODE of one of the three implementations `interleave`
# rotates: bullmq-rs ("$ours"), bullmq-official ("$official") or bullmq-node (NODE_SCRIPT).
run_peer() {
  case $1 in
    bullmq-rs) "$ours" --mode "$2" ;;
    bullmq-official) "$official" --mode "$2" ;;
    bullmq-node) node "$3" --mode "$2" ;;
  esac
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
        logged_run "$((round + 1))/$rounds" "$mode" "$impl" "$results" "$loads" "$impl" "$mode"
      done
    done
  done
}

# three_way NAME ROUNDS MODES: the comparison of benchmark NAME (worker, pickup), with $ours
# and $official built: runs them and `node benches/node/NAME.mjs` over ROUNDS rounds of the
# comma-separated MODES (`interleave`), keeping the JSON lines and load averages in
# target/bench-NAME/, then prints the load summary and benches/compare-NAME-table.py's tables.
three_way() {
  local name=$1 rounds=$2 modes=$3
  bench_files "$name"
  # `interleave` calls it while `name` is in scope (bash's scoping is dynamic).
  run() { run_peer "$1" "$2" "benches/node/$name.mjs"; }
  interleave "$rounds" "$modes" "$results" "$loads"
  echo "raw results: $results; load averages: $loads" >&2
  echo "load average (1 min) before the runs: $(load_summary "$loads")"
  echo
  python3 "benches/compare-$name-table.py" "$results"
}

# private_redis SERVER: starts the redis-server SERVER on a free loopback port, saving nothing,
# in a folder of its own, and waits until it answers; sets `port`, exports REDIS_URL, and stops
# it and removes the folder however the script ends (an EXIT trap).
private_redis() {
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis_dir=$(mktemp -d)
  "$1" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$redis_dir" \
    --logfile "$redis_dir/redis.log" &
  redis_pid=$!
  trap stop_private_redis EXIT
  export REDIS_URL=redis://127.0.0.1:$port
  local _
  for _ in $(seq 300); do
    if redis_cmd PING 2>/dev/null | grep -q PONG; then return 0; fi
    sleep 0.1
  done
  echo "redis-server did not start on port $port:" >&2
  cat "$redis_dir/redis.log" >&2
  exit 1
}

stop_private_redis() {
  kill "$redis_pid" 2>/dev/null || true
  wait "$redis_pid" 2>/dev/null || true
  rm -rf "$redis_dir"
}

# redis_cmd CMD...: one command to the private Redis, its reply on stdout.
redis_cmd() {
  python3 - "$port" "$@" <<'PY'
import socket, sys
port, args = int(sys.argv[1]), sys.argv[2:]
with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
    s.sendall(b"".join([f"*{len(args)}\r\n".encode()] + [f"${len(a)}\r\n{a}\r\n".encode() for a in args]))
    print(s.recv(4096).decode().strip())
PY
}
