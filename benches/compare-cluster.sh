#!/usr/bin/env bash
# Redis Cluster against one standalone Redis (issue 16), with benches/redis_queues.rs (ours)
# and benches/node/queues.mjs (Node.js BullMQ 6.7.6 on ioredis `Cluster`):
#
#   benches/compare-cluster.sh
#
# Starts private servers on free loopback ports (nothing saved, all stopped when the script
# ends): a standalone `redis-server`, a standalone one with a replica, a one-primary cluster
# (every slot on one node, no replica: cluster mode's own cost) and a six-node cluster (`redis-cli --cluster create …
# --cluster-replicas 1`: three primaries, each with a replica). Then, round after round (the
# order of the runs rotating from round to round, so that a noisy stretch of the machine hits
# all alike), each combination runs once, both modes (`add`: add_bulk of 1,000; `worker`:
# concurrency 100 per queue):
#   - one queue, ours: standalone, one-primary cluster, standalone with a replica, six-node
#     cluster (whose primaries each feed a replica: compare it with the replicated one);
#   - N queues (BENCH_QUEUE_COUNTS, "3 6": queue k on primary k mod 3), ours and Node.js:
#     standalone and six-node cluster; and one queue for Node.js on both.
# The tables show medians with ranges, ratios (cluster / standalone, ours / Node.js) and the
# CPU per job of the client, of all server nodes, and of the busiest node (which bounds the
# throughput where every node has a core of its own).
#
# Env: BENCH_ROUNDS (5), BENCH_JOBS (20,000 per run, over all its queues), BENCH_WARMUP,
# BENCH_QUEUE_COUNTS ("3 6"), BENCH_NODE (1: run Node.js too; 0: ours alone). Needs
# redis-server and redis-cli 7, Python 3 and `npm ci --prefix tests/node`. The JSON lines and
# the load average before each run are kept in target/bench-cluster/.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

rounds=${BENCH_ROUNDS:-5}
counts=${BENCH_QUEUE_COUNTS:-3 6}
with_node=${BENCH_NODE:-1}
export BENCH_JOBS=${BENCH_JOBS:-20000}

ours=$(bench_executable redis_queues)

# free_port: a free loopback port below 55536 (a cluster node's bus listens 10,000 above it),
# along with that bus port.
free_port() {
  python3 -c '
import random, socket
while True:
    port = random.randrange(20000, 55536)
    try:
        for p in (port, port + 10000):
            socket.socket().bind(("127.0.0.1", p))
    except OSError:
        continue
    print(port)
    break'
}
dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
# server PORT ARGS...: a redis-server in its own folder, in the background.
server() {
  local port=$1
  shift
  mkdir -p "$dir/$port"
  (cd "$dir/$port" && exec redis-server --port "$port" --bind 127.0.0.1 --save '' \
    --appendonly no --logfile "$dir/$port/log" "$@") &
  pids+=($!)
  for _ in $(seq 300); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "redis-server did not start on $port:" >&2
  cat "$dir/$port/log" >&2
  exit 1
}
# cluster_ok PORT: waits until the node says every slot is served.
cluster_ok() {
  for _ in $(seq 200); do
    redis-cli -p "$1" cluster info | grep -q '^cluster_state:ok' && return
    sleep 0.1
  done
  echo "the cluster on $1 did not become healthy" >&2
  exit 1
}
cluster_args=(--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000)

standalone=$(free_port)
server "$standalone"
# A standalone server with a replica, as each primary of the six-node cluster has.
replicated=$(free_port)
server "$replicated"
replica=$(free_port)
server "$replica" --replicaof 127.0.0.1 "$replicated"
for _ in $(seq 300); do
  redis-cli -p "$replica" info replication | grep -q '^master_link_status:up' && break
  sleep 0.1
done
one=$(free_port)
server "$one" "${cluster_args[@]}"
redis-cli -p "$one" cluster addslotsrange 0 16383 >/dev/null
six=()
for _ in 1 2 3 4 5 6; do
  port=$(free_port)
  server "$port" "${cluster_args[@]}"
  six+=("127.0.0.1:$port")
done
redis-cli --cluster create "${six[@]}" --cluster-replicas 1 --cluster-yes >/dev/null
cluster_ok "$one"
cluster_ok "${six[0]#*:}"
# Every node of the six agrees, and every replica is linked, before the runs start.
for node in "${six[@]}"; do
  cluster_ok "${node#*:}"
  for _ in $(seq 300); do
    info=$(redis-cli -p "${node#*:}" info replication)
    if grep -q '^role:master' <<<"$info" || grep -q '^master_link_status:up' <<<"$info"; then break; fi
    sleep 0.1
  done
done

declare -A url=(
  [standalone]=redis://127.0.0.1:$standalone
  [replicated]=redis://127.0.0.1:$replicated
  [cluster1]=redis+cluster://127.0.0.1:$one
  [cluster6]=redis+cluster://${six[0]}
)

bench_files cluster

# The runs of a round: "impl target queues".
runs=("rs standalone 1" "rs cluster1 1" "rs replicated 1" "rs cluster6 1")
if [[ $with_node == 1 ]]; then runs+=("node standalone 1" "node cluster6 1"); fi
for n in $counts; do
  runs+=("rs standalone $n" "rs cluster6 $n")
  if [[ $with_node == 1 ]]; then runs+=("node standalone $n" "node cluster6 $n"); fi
done

for ((round = 0; round < rounds; round++)); do
  for ((k = 0; k < ${#runs[@]}; k++)); do
    read -r impl target n <<<"${runs[$(((k + round) % ${#runs[@]}))]}"
    echo "$(date +%T) $impl $target $n load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$loads"
    echo "round $((round + 1))/$rounds: $impl, $target, $n queue(s)" >&2
    case $impl in
      rs) cmd=("$ours") ;;
      node) cmd=(node benches/node/queues.mjs) ;;
    esac
    REDIS_URL=${url[$target]} BENCH_QUEUES=$n "${cmd[@]}" |
      sed -u "s/^{/{\"target\":\"$target\",\"round\":$round,/" | tee -a "$results" >&2
  done
done

echo "raw results: $results; load averages: $loads" >&2
echo
echo "$rounds rounds of $BENCH_JOBS jobs; load average (1 min) before the runs:" \
  "$(cut -d' ' -f6 "$loads" | sort -n | sed -n '1p;$p' | paste -sd- -) on $(nproc) cores"
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def pick(impl, target, n, mode):
    return [r for r in rows if (r["impl"], r["target"], r["queues"], r["mode"]) == (impl, target, n, mode)]
def med(rs, field):
    return statistics.median(r[field] for r in rs) if rs else float("nan")
def cell(rs):
    v = [r["jobs_per_sec"] for r in rs]
    return f"{statistics.median(v):,.0f} ({min(v):,.0f}–{max(v):,.0f})" if v else "–"
def cpu(rs):
    return (f"{med(rs, 'client_cpu_us_per_job'):.1f} / {med(rs, 'server_cpu_us_per_job'):.1f} / "
            f"{med(rs, 'busiest_node_cpu_us_per_job'):.1f}") if rs else "–"
print("\nOne queue, bullmq-rs: jobs/s median (range); CPU µs per job: client / all nodes / busiest node")
print("\n| mode | standalone | cluster, 1 primary | ratio | standalone + replica | cluster, 3+3 nodes | ratio |")
print("|---|---:|---:|---:|---:|---:|---:|")
for mode in ("add", "worker"):
    s, c1, r, c6 = (pick("bullmq-rs", t, 1, mode) for t in ("standalone", "cluster1", "replicated", "cluster6"))
    print(f"| {mode} | {cell(s)} | {cell(c1)} | {med(c1, 'jobs_per_sec') / med(s, 'jobs_per_sec'):.2f} | "
          f"{cell(r)} | {cell(c6)} | {med(c6, 'jobs_per_sec') / med(r, 'jobs_per_sec'):.2f} |")
print("\n| mode | CPU standalone | CPU 1 primary | CPU standalone + replica | CPU 3+3 |")
print("|---|---:|---:|---:|---:|")
for mode in ("add", "worker"):
    print(f"| {mode} | " + " | ".join(cpu(pick("bullmq-rs", t, 1, mode)) for t in ("standalone", "cluster1", "replicated", "cluster6")) + " |")
counts = sorted({r["queues"] for r in rows})
impls = [i for i in ("bullmq-rs", "bullmq-node") if any(r["impl"] == i for r in rows)]
print("\nN queues, aggregate jobs/s median (range); CPU µs per job: client / all nodes / busiest node")
print("\n| mode | queues | impl | standalone | cluster 3+3 | cluster / standalone | CPU standalone | CPU cluster | rs / Node on the cluster |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
for mode in ("add", "worker"):
    for n in counts:
        for impl in impls:
            s, c = pick(impl, "standalone", n, mode), pick(impl, "cluster6", n, mode)
            if not s and not c:
                continue
            vs_node = ""
            if impl == "bullmq-rs" and "bullmq-node" in impls:
                node = med(pick("bullmq-node", "cluster6", n, mode), "jobs_per_sec")
                vs_node = f"{med(c, 'jobs_per_sec') / node:.2f}"
            print(f"| {mode} | {n} | {impl} | {cell(s)} | {cell(c)} | "
                  f"{med(c, 'jobs_per_sec') / med(s, 'jobs_per_sec'):.2f} | {cpu(s)} | {cpu(c)} | {vs_node} |")
PY
