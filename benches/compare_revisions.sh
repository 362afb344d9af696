#!/usr/bin/env bash
# Add and worker throughput of two git revisions of bullmq-rs, interleaved on one private Redis:
# did a change make things slower?
#
#   benches/compare_revisions.sh [BASE [NEW]]        # defaults: HEAD~1 and HEAD
#
# Each revision is exported (`git archive`) into target/compare-revisions/src-<commit>/ and its
# `redis_add` and `redis_worker` benches are built there (`cargo bench --no-run`, release).
# Both builds share one target directory ($CARGO_TARGET_DIR, else this repository's target/):
# the dependencies are built once, while each revision's own crates, living in a directory of
# their own, get binaries of their own. Then a private `redis-server --save ''` starts on a free
# port and, round after round, each bench of each revision runs once, the two revisions' order
# swapping from round to round so that a noisy stretch of the machine hits both alike. Redis is
# flushed before every run. The end prints, per bench and mode, each revision's median jobs/s
# and client CPU per job with their ranges, and the ratio NEW / BASE; a line whose ranges
# overlap is within this machine's noise, one whose ranges lie apart is marked better or worse
# (with how often two identical builds would land apart by chance over that many rounds).
#
# The same revision twice (`benches/compare_revisions.sh HEAD HEAD`) builds once and measures
# the noise alone.
#
# Env: BENCH_ROUNDS (5), BENCH_JOBS and BENCH_WARMUP (passed to both benches: 20,000 and 2,000
# by default), BENCH_ADD_MODES (sequential,concurrent8,bulk1000) and BENCH_WORKER_MODES
# (instant-c1-keep,instant-c10-keep,instant-c100-keep, a subset of the worker bench's modes;
# `all` runs every one), REDIS_SERVER (redis-server). The JSON lines and the load average before
# each run are kept in target/compare-revisions/. Needs git, Python 3 and redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source=benches/lib.sh
. benches/lib.sh

base_rev=${1:-HEAD~1}
new_rev=${2:-HEAD}
rounds=${BENCH_ROUNDS:-5}
add_modes=${BENCH_ADD_MODES:-sequential,concurrent8,bulk1000}
worker_modes=${BENCH_WORKER_MODES:-instant-c1-keep,instant-c10-keep,instant-c100-keep}
redis_server=${REDIS_SERVER:-redis-server}
work=$root/target/compare-revisions
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
# The upstream tarball this repository already fetched (git-ignored), so that building an
# exported revision needs no network.
if [[ -z ${BULLMQ_UPSTREAM_CACHE:-} && -d $root/.upstream ]]; then
  export BULLMQ_UPSTREAM_CACHE=$root/.upstream
fi
mkdir -p "$work"

# commit REV: the full commit id REV names.
commit() { git rev-parse --verify --quiet "$1^{commit}" || { echo "not a revision: $1" >&2; exit 2; }; }

# build COMMIT: exports COMMIT (once) and builds its two benches; prints "add-exe worker-exe".
build() {
  local sha=$1 src
  src=$work/src-${sha:0:12}
  if [[ ! -f $src/Cargo.toml ]]; then
    rm -rf "$src.tmp" && mkdir -p "$src.tmp"
    git archive "$sha" | tar -x -C "$src.tmp"
    mv "$src.tmp" "$src"
  fi
  echo "building ${sha:0:12} (cargo bench --no-run, in $src)..." >&2
  (cd "$src" && cargo bench --bench redis_add --bench redis_worker --no-run \
    --message-format=json-render-diagnostics) | python3 -c '
import json, sys
exes = {}
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        exes[m["target"]["name"]] = m["executable"]
print(exes["redis_add"], exes["redis_worker"])
'
}

base_sha=$(commit "$base_rev")
new_sha=$(commit "$new_rev")
read -r base_add base_worker < <(build "$base_sha")
if [[ $new_sha == "$base_sha" ]]; then
  new_add=$base_add new_worker=$base_worker
else
  read -r new_add new_worker < <(build "$new_sha")
fi
for exe in "$base_add" "$base_worker" "$new_add" "$new_worker"; do
  [[ -x $exe ]] || { echo "a build failed (see above)" >&2; exit 1; }
done

# A private Redis on a free port, nothing saved, stopped however this script ends.
private_redis "$redis_server"

stamp=$(date +%Y%m%dT%H%M%S)
results=$work/results-$stamp.jsonl
loads=$work/load-$stamp.txt
: >"$results"
: >"$loads"

# run LABEL BENCH EXE MODES ROUND: one run, its JSON lines tagged with the revision and round.
run() {
  local label=$1 bench=$2 exe=$3 modes=$4 round=$5 args=()
  [[ $modes != all ]] && args=(--mode "$modes")
  redis_cmd FLUSHALL >/dev/null
  echo "$(date +%T) $bench $label load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$loads"
  echo "round $round/$rounds: $bench, $label" >&2
  "$exe" "${args[@]}" | sed -u "s/^{/{\"rev\":\"$label\",\"bench\":\"$bench\",\"round\":$round,/" |
    tee -a "$results" >&2
}

for ((round = 1; round <= rounds; round++)); do
  if ((round % 2 == 1)); then order="base new"; else order="new base"; fi
  for rev in $order; do
    if [[ $rev == base ]]; then run base redis_add "$base_add" "$add_modes" "$round"; else run new redis_add "$new_add" "$add_modes" "$round"; fi
  done
  for rev in $order; do
    if [[ $rev == base ]]; then run base redis_worker "$base_worker" "$worker_modes" "$round"; else run new redis_worker "$new_worker" "$worker_modes" "$round"; fi
  done
done

echo "raw results: $results; load averages: $loads" >&2
echo
echo "base = $base_rev (${base_sha:0:12}), new = $new_rev (${new_sha:0:12}), $rounds rounds," \
  "load average (1 min) $(cut -d' ' -f5 "$loads" | sort -n | sed -n '1p;$p' | paste -sd- -)"
python3 - "$results" <<'PY'
import json, math, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
metrics = [("jobs_per_sec", "jobs/s", True), ("client_cpu_us_per_job", "client CPU µs/job", False)]
print("\n| bench | mode | metric | base median [range] | new median [range] | new / base | |")
print("|---|---|---|---|---|---:|---|")
for bench in dict.fromkeys(r["bench"] for r in rows):
    for mode in dict.fromkeys(r["mode"] for r in rows if r["bench"] == bench):
        for field, label, higher_is_better in metrics:
            vals = {rev: [r[field] for r in rows
                          if r["bench"] == bench and r["mode"] == mode and r["rev"] == rev]
                    for rev in ("base", "new")}
            if not vals["base"] or not vals["new"]:
                continue
            med = {rev: statistics.median(v) for rev, v in vals.items()}
            cell = lambda rev: f"{med[rev]:,.1f} [{min(vals[rev]):,.1f}..{max(vals[rev]):,.1f}]"
            ratio = med["new"] / med["base"] if med["base"] else float("nan")
            overlap = min(vals["base"]) <= max(vals["new"]) and min(vals["new"]) <= max(vals["base"])
            if overlap:
                verdict = "within noise"
            else:
                better = (ratio > 1) == higher_is_better
                verdict = "apart: **better**" if better else "apart: **worse**"
            print(f"| {bench} | {mode} | {label} | {cell('base')} | {cell('new')} | {ratio:.3f} | {verdict} |")
rounds = max(r["round"] for r in rows)
print(f"\n\"apart\": the two ranges do not overlap. Two identical builds land apart by chance with"
      f" probability 2 / C({2 * rounds}, {rounds}) = {2 / math.comb(2 * rounds, rounds):.1%} per line"
      f" ({rounds} rounds each); more rounds make it rarer.")
PY
