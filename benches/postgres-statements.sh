#!/usr/bin/env bash
# What one processed job costs PostgreSQL, from the server's own statistics: statements
# (pg_stat_statements, each with its calls per job), transactions committed, and WAL records
# and bytes per job, for our worker on a private server of its own.
#
#   benches/postgres-statements.sh
#
# Starts a throwaway cluster (initdb in a temporary directory, `pg_stat_statements` preloaded,
# on BENCH_PG_PORT, 55441 by default; as the `postgres` user when run as root) and, for each
# mode, runs `postgres_worker` twice (BENCH_COUNT_STEP, see benches/support/instructions.rs):
# once to fill a queue in a fresh schema, then, the statistics reset, once to work through
# it. The counts are exact whatever the machine's load. Env: BENCH_JOBS (2000), BENCH_MODES
# (instant-c1-keep,instant-c10-keep,instant-c100-keep), BENCH_IMPLS (rs; `rs,node` also
# counts Node.js BullMQ's PostgreSQL backend, `benches/node/pg-worker.mjs`, after `npm ci
# --prefix tests/node`), BENCH_TOP (12 statements shown),
# BENCH_EXE (a `postgres_worker` already built, in any profile: the counts do not depend on
# it; unset: `cargo bench --no-run` builds one).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=benches/lib.sh
. benches/lib.sh

modes=${BENCH_MODES:-instant-c1-keep,instant-c10-keep,instant-c100-keep}
jobs=${BENCH_JOBS:-2000}
top=${BENCH_TOP:-12}
port=${BENCH_PG_PORT:-55441}
bin=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d | sort -V | tail -n 1)
[[ -x $bin/initdb ]] || { echo "initdb not found under /usr/lib/postgresql" >&2; exit 1; }

impls=${BENCH_IMPLS:-rs}
ours=
if [[ ,$impls, == *,rs,* ]]; then
  ours=${BENCH_EXE:-$(bench_executable postgres_worker --features postgres)}
fi
# run_impl IMPL MODE: one step (BENCH_COUNT_STEP, exported by the caller) of IMPL's harness.
run_impl() {
  case $1 in
    rs) "$ours" --mode "$2" ;;
    node) node benches/node/pg-worker.mjs --mode "$2" ;;
    *) echo "unknown implementation $1 (rs, node)" >&2; return 1 ;;
  esac
}

# statement_table TITLE CONDITION: under TITLE, the BENCH_TOP statements of
# pg_stat_statements most called (CONDITION, such as "toplevel AND ", narrows them), per job
# of the run ($jobs).
statement_table() {
  echo
  echo "$1"
  echo
  echo "| calls/job | ms/call | rows/call | statement |"
  echo "|---|---|---|---|"
  psql -qAt -F ' | ' "$DATABASE_URL" <<SQL
SELECT '| ' || round(calls::numeric / $jobs, 3), round(mean_exec_time::numeric, 3),
  round(rows::numeric / greatest(calls, 1), 2),
  left(regexp_replace(query, '\s+', ' ', 'g'), 110) || ' |'
  FROM pg_stat_statements WHERE $2query NOT ILIKE '%pg_stat%'
  ORDER BY calls DESC, total_exec_time DESC LIMIT $top;
SQL
}

dir=$(mktemp -d /tmp/bullmq-pg-statements-XXXXXX)
as_pg() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}
[[ $(id -u) == 0 ]] && chown postgres:postgres "$dir"
as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >/dev/null
cat >>"$dir/data/postgresql.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 200
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = 'all'
EOF
as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
stop() {
  as_pg "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

admin=postgres://postgres@127.0.0.1:$port
psql -qAt "$admin/postgres" -c 'CREATE DATABASE test'
psql -qAt "$admin/test" -c 'CREATE EXTENSION pg_stat_statements'
export DATABASE_URL=$admin/test

for impl in ${impls//,/ }; do
for mode in ${modes//,/ }; do
  schema=bst_${impl}_${mode//-/_}_$$
  BENCH_COUNT_STEP=fill BENCH_COUNT_PREFIX=$schema BENCH_JOBS=$jobs run_impl "$impl" "$mode" >/dev/null
  psql -qAt "$DATABASE_URL" -c "SELECT pg_stat_statements_reset(), pg_stat_reset(), pg_stat_reset_shared('wal')" >/dev/null
  BENCH_COUNT_STEP=work BENCH_COUNT_PREFIX=$schema BENCH_JOBS=$jobs run_impl "$impl" "$mode" >/dev/null
  # Backends flush their counters as they exit (the worker closed its pool) or within a second.
  sleep 1.5
  echo
  echo "## $impl, $mode: $jobs jobs"
  psql -qAt -F ' | ' "$DATABASE_URL" <<SQL
SELECT 'transactions committed per job | ' || round(xact_commit::numeric / $jobs, 2)
  || E'\nrolled back per job | ' || round(xact_rollback::numeric / $jobs, 2)
  FROM pg_stat_database WHERE datname = 'test';
SELECT 'WAL records per job | ' || round(wal_records::numeric / $jobs, 2)
  || E'\nWAL bytes per job | ' || round(wal_bytes::numeric / $jobs, 0)
  || E'\nWAL full-page images per job | ' || round(wal_fpi::numeric / $jobs, 2)
  FROM pg_stat_wal;
SELECT 'statements per job (all) | ' || round(sum(calls)::numeric / $jobs, 2)
  || E'\nstatements per job sent by the client | '
  || round(sum(calls) FILTER (WHERE toplevel)::numeric / $jobs, 2)
  FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat%';
SQL
  statement_table "Sent by the client:" "toplevel AND "
  statement_table "All, nested ones included:" ""
done
done
