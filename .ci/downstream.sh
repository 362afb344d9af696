#!/usr/bin/env bash
# The crates as a user gets them: packages the workspace (`cargo xtask package`, which first
# writes the upstream text the packaged bullmq-upstream carries), unpacks the .crate files into
# a temporary directory outside the workspace, and builds a small program against them with
# Node.js and npm off PATH, no BULLMQ_UPSTREAM_* variable and the network off
# (CARGO_NET_OFFLINE; dependencies come from ~/.cargo/registry, versions from the workspace's
# Cargo.lock). The program adds a job and processes it with a Worker, on Redis, then (built with
# `--no-default-features --features postgres`) on PostgreSQL; in between, the facade's docs are
# built as docs.rs builds them (DOCS_RS=1, every feature). Last, the command line is installed
# from its package with `cargo install` (offline, without Node.js) and lists the queue the
# program left on Redis.
#
# Usage: .ci/downstream.sh [--skip-package]   (REDIS_URL / DATABASE_URL as for the tests)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Where `cargo xtask package` / `publish` put the packages and verify them: the dependencies
# built there are reused.
target="$root/target/package-verify"
if [[ "${1:-}" != "--skip-package" ]]; then
  cargo xtask package --no-verify --quiet
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bullmq-downstream.XXXXXX")
schema="downstream_$$_$RANDOM"
cleanup() {
  rm -rf "$work"
  psql -q "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}" \
    -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
}
trap cleanup EXIT

crates=(bullmq bullmq-core bullmq-cron bullmq-flow bullmq-postgres bullmq-redis bullmq-scheduler bullmq-upstream)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
mkdir -p "$work/crates" "$work/app/src"
patch=""
for crate in "${crates[@]}"; do
  file="$target/package/$crate-$version.crate"
  [[ -f "$file" ]] || { echo "missing $file (run cargo xtask package)" >&2; exit 1; }
  tar -xzf "$file" -C "$work/crates"
  patch+="$crate = { path = \"../crates/$crate-$version\" }"$'\n'
done

cat > "$work/app/Cargo.toml" <<TOML
[package]
name = "downstream"
version = "0.0.0"
edition = "2024"
publish = false

[features]
default = ["redis"]
redis = ["bullmq/redis"]
postgres = ["bullmq/postgres"]

[dependencies]
bullmq = { version = "$version", default-features = false }
tokio = { version = "1", features = ["rt-multi-thread", "macros", "time"] }
serde_json = "1"

[patch.crates-io]
$patch
[workspace]
TOML
cp .ci/downstream/main.rs "$work/app/src/main.rs"
cp Cargo.lock "$work/app/Cargo.lock"

# PATH without Node.js: every other program of PATH, linked into one directory.
nonode="$work/bin"
mkdir -p "$nonode"
IFS=: read -ra dirs <<< "$PATH"
for dir in "${dirs[@]}"; do
  for exe in "$dir"/*; do
    name=${exe##*/}
    case "$name" in node|nodejs|npm|npx|corepack|yarn|pnpm) continue ;; esac
    [[ -x "$exe" && ! -e "$nonode/$name" ]] && ln -s "$exe" "$nonode/$name"
  done
done

# Runs a command in directory $1 without Node.js, BULLMQ_UPSTREAM_* or network.
isolated_in() {
  local dir=$1
  shift
  (cd "$dir" && env -u BULLMQ_UPSTREAM_TARBALL -u BULLMQ_UPSTREAM_CACHE \
    PATH="$nonode" CARGO_NET_OFFLINE=true CARGO_TARGET_DIR="$target" "$@")
}
isolated() { isolated_in "$work/app" "$@"; }
isolated sh -c '! command -v node && ! command -v npm' >/dev/null \
  || { echo "node or npm still on PATH" >&2; exit 1; }

echo "downstream: building against the packaged crates (Redis)"
isolated cargo build --quiet
PREFIX="downstream-$$" "$target/debug/downstream"

echo "downstream: docs.rs's build of the packaged facade, every feature (DOCS_RS=1, offline)"
# As docs.rs does: in the unpacked crate, every feature; its dependencies are the packaged crates.
facade_patch=()
for crate in "${crates[@]}"; do
  [[ "$crate" == bullmq ]] || facade_patch+=(--config "patch.crates-io.$crate.path=\"$work/crates/$crate-$version\"")
done
isolated_in "$work/crates/bullmq-$version" env DOCS_RS=1 RUSTDOCFLAGS="-D warnings" \
  cargo doc --quiet --no-deps --all-features "${facade_patch[@]}"

echo "downstream: building against the packaged crates (PostgreSQL)"
isolated cargo build --quiet --no-default-features --features postgres
SCHEMA="$schema" "$target/debug/downstream"

echo "downstream: cargo install bullmq-cli from its package (offline, without Node.js)"
tar -xzf "$target/package/bullmq-cli-$version.crate" -C "$work/crates"
# `bullmq dashboard` serves bullmq-dashboard's router.
tar -xzf "$target/package/bullmq-dashboard-$version.crate" -C "$work/crates"
cli_patch=()
for crate in "${crates[@]}" bullmq-dashboard; do
  cli_patch+=(--config "patch.crates-io.$crate.path=\"$work/crates/$crate-$version\"")
done
isolated_in "$work" cargo install --quiet --offline --debug --root "$work/install" \
  --path "$work/crates/bullmq-cli-$version" "${cli_patch[@]}"
cli=("$work/install/bin/bullmq" --url "${REDIS_URL:-redis://127.0.0.1:6379}" --prefix "downstream-cli-$$")
"${cli[@]}" add q hello --data '{"n":1}' >/dev/null
"${cli[@]}" -o jsonl queues | grep -q '"name":"q"' \
  || { echo "the installed bullmq does not list the queue it added" >&2; exit 1; }
"${cli[@]}" obliterate q --yes >/dev/null
