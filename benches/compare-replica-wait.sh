#!/usr/bin/env bash
# What `RedisOptions::wait_for_replicas` costs: add and worker throughput with `WAIT 1` after
# each add and finishing call, against the same without, on a private primary and its replica.
#
#   benches/compare-replica-wait.sh
#
# Builds the `redis_add` and `redis_worker` benches (release), starts a private primary and a
# replica following it (`redis-server --save ''`, free loopback ports), then, round after round,
# runs each bench with `BENCH_WAIT_REPLICAS` unset ("off") and set to 1 ("on"), the order
# swapping from round to round so that a noisy stretch of the machine hits both alike. The
# primary is flushed before every run. The end prints, per bench and mode, the median jobs/s and
# client CPU per job of each with their ranges, and the ratio on / off.
#
# Env: BENCH_ROUNDS (5), BENCH_JOBS (5,000) and BENCH_WARMUP (500), BENCH_ADD_MODES
# (sequential), BENCH_WORKER_MODES (instant-c10-keep), REDIS_SERVER (redis-server). The JSON
# lines are kept in target/compare-replica-wait/. Needs Python 3 and redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

rounds=${BENCH_ROUNDS:-5}
export BENCH_JOBS=${BENCH_JOBS:-5000} BENCH_WARMUP=${BENCH_WARMUP:-500}
add_modes=${BENCH_ADD_MODES:-sequential}
worker_modes=${BENCH_WORKER_MODES:-instant-c10-keep}
redis_server=${REDIS_SERVER:-redis-server}
work=target/compare-replica-wait
mkdir -p "$work"

add_exe=$(bench_executable redis_add)
worker_exe=$(bench_executable redis_worker)

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
primary=$(free_port)
replica=$(free_port)
redis_dir=$(mktemp -d)
"$redis_server" --port "$primary" --bind 127.0.0.1 --save '' --appendonly no --dir "$redis_dir" \
  --logfile "$redis_dir/primary.log" &
primary_pid=$!
"$redis_server" --port "$replica" --bind 127.0.0.1 --save '' --appendonly no --dir "$redis_dir" \
  --logfile "$redis_dir/replica.log" --replicaof 127.0.0.1 "$primary" &
replica_pid=$!
cleanup() {
  kill "$primary_pid" "$replica_pid" 2>/dev/null || true
  wait "$primary_pid" "$replica_pid" 2>/dev/null || true
  rm -rf "$redis_dir"
}
trap cleanup EXIT
redis_cmd() { # PORT CMD...: one command, its reply on stdout
  python3 - "$@" <<'PY'
import socket, sys
port, args = int(sys.argv[1]), sys.argv[2:]
with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
    s.sendall(b"".join([f"*{len(args)}\r\n".encode()] + [f"${len(a)}\r\n{a}\r\n".encode() for a in args]))
    print(s.recv(65536).decode().strip())
PY
}
following() { # whether the replica follows the primary (the reply read whole: no early close)
  local info
  info=$(redis_cmd "$replica" INFO replication 2>/dev/null) || return 1
  [[ $info == *master_link_status:up* ]]
}
for _ in $(seq 300); do
  if following; then break; fi
  sleep 0.1
done
following || { echo "the replica did not follow the primary" >&2; exit 1; }
export REDIS_URL=redis://127.0.0.1:$primary

results=$work/results-$(date +%Y%m%dT%H%M%S).jsonl
: >"$results"

# run LABEL BENCH EXE MODES ROUND: one run, its JSON lines tagged with the setting and round.
run() {
  local label=$1 bench=$2 exe=$3 modes=$4 round=$5
  redis_cmd "$primary" FLUSHALL >/dev/null
  echo "round $round/$rounds: $bench, WAIT $label, load $(cut -d' ' -f1 /proc/loadavg)" >&2
  if [[ $label == on ]]; then export BENCH_WAIT_REPLICAS=1; else unset BENCH_WAIT_REPLICAS; fi
  "$exe" --mode "$modes" | sed -u "s/^{/{\"wait\":\"$label\",\"bench\":\"$bench\",\"round\":$round,/" |
    tee -a "$results" >&2
}

for ((round = 1; round <= rounds; round++)); do
  if ((round % 2 == 1)); then order="off on"; else order="on off"; fi
  for label in $order; do run "$label" redis_add "$add_exe" "$add_modes" "$round"; done
  for label in $order; do run "$label" redis_worker "$worker_exe" "$worker_modes" "$round"; done
done

echo "raw results: $results" >&2
python3 - "$results" "$rounds" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"\n{sys.argv[2]} rounds; median [range]\n")
print("| bench | mode | metric | WAIT off | WAIT 1 | on / off |\n|---|---|---|---|---|---:|")
for bench in dict.fromkeys(r["bench"] for r in rows):
    for mode in dict.fromkeys(r["mode"] for r in rows if r["bench"] == bench):
        for field, label in [("jobs_per_sec", "jobs/s"), ("client_cpu_us_per_job", "client CPU µs/job")]:
            vals = {w: [r[field] for r in rows if r["bench"] == bench and r["mode"] == mode and r["wait"] == w]
                    for w in ("off", "on")}
            if not vals["off"] or not vals["on"]:
                continue
            med = {w: statistics.median(v) for w, v in vals.items()}
            cell = lambda w: f"{med[w]:,.1f} [{min(vals[w]):,.1f}..{max(vals[w]):,.1f}]"
            print(f"| {bench} | {mode} | {label} | {cell('off')} | {cell('on')} | {med['on'] / med['off']:.2f} |")
PY
