#!/usr/bin/env bash
# The previous release's programs against today's crates: the examples and the downstream
# program as they were at 0.1.0 (the last packaged version, commit 22b9e72), plus
# .ci/previous-release/app.rs (a small application written against 0.1.0's API: the names
# an application upgrade tripped over), built against the workspace. They must build with
# deprecation warnings only: any other warning or error fails, and the deprecations are listed
# (CHANGELOG.md says how to clear each).
#
# Usage: .ci/previous-release.sh   (needs the git history: a shallow clone cannot run it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
release=${BULLMQ_PREVIOUS_RELEASE:-22b9e72}
git cat-file -e "$release^{commit}" || {
  echo "the previous release $release is not in this clone (a shallow clone?): git fetch --unshallow" >&2
  exit 1
}

app="${CARGO_TARGET_DIR:-$root/target}/previous-release"
rm -rf "$app"
mkdir -p "$app/examples/support" "$app/examples/quickstart" "$app/examples/k8s_worker" "$app/src"
for file in examples/producer.rs examples/observability.rs examples/support/redact.rs \
  examples/quickstart/main.rs examples/quickstart/server.rs examples/k8s_worker/main.rs; do
  git show "$release:$file" > "$app/$file"
done
git show "$release:.ci/downstream/main.rs" > "$app/examples/downstream.rs"
cp .ci/previous-release/app.rs "$app/src/main.rs"

cat > "$app/Cargo.toml" <<TOML
[package]
name = "previous-release"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
bullmq = { path = "$root", features = ["redis", "postgres", "flow", "scheduler"] }
tokio = { version = "1", features = ["macros", "rt-multi-thread", "net", "io-util", "signal", "time"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"
axum = { version = "0.8", default-features = false, features = ["http1", "tokio"] }
metrics-exporter-prometheus = { version = "0.18", default-features = false }
tracing-subscriber = { version = "0.3", default-features = false, features = ["registry", "std", "fmt"] }

# The downstream program picks its store by these (Redis here, as bullmq's DefaultBackend).
[features]
default = ["redis"]
redis = []
postgres = []

[[example]]
name = "quickstart"
path = "examples/quickstart/main.rs"

[[example]]
name = "k8s_worker"
path = "examples/k8s_worker/main.rs"
TOML
cp Cargo.lock "$app/Cargo.lock"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Built in the workspace's target directory: the dependencies built for the tests are reused.
if ! cargo build --manifest-path "$app/Cargo.toml" --all-targets --message-format short \
  --target-dir "${CARGO_TARGET_DIR:-$root/target}" 2>&1 | tee "$log"; then
  echo "the previous release's programs no longer build against this workspace" >&2
  exit 1
fi
# Every warning must be a deprecation (the summary lines `generated N warnings` aside).
others=$(grep -E '^[^ ]+:[0-9]+:[0-9]+: warning' "$log" | grep -v 'use of deprecated' || true)
if [[ -n "$others" ]]; then
  echo "the previous release's programs build with warnings other than deprecations:" >&2
  echo "$others" >&2
  exit 1
fi
echo "deprecations met by the previous release's programs:"
grep -E '^[^ ]+:[0-9]+:[0-9]+: warning: use of deprecated' "$log" | sed 's/^[^ ]*: warning: //' | sort | uniq -c || echo "  none"
