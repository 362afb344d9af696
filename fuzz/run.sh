#!/usr/bin/env bash
# Runs the fuzz targets (all, or those named) for FUZZ_SECS seconds each (20 by default) and
# fails on the first finding, which libFuzzer leaves in fuzz/artifacts/<target>/. See README.md.
#
# With a nightly toolchain it builds with AddressSanitizer (cargo-fuzz's default); without one
# it builds on stable with RUSTC_BOOTSTRAP=1 and no sanitizer (the crates forbid unsafe code,
# so a panic, a hang or a broken round trip is what there is to find). cargo-fuzz is installed
# when missing. FUZZ_TARGET_DIR overrides the build directory (fuzz/target). FUZZ_QUICK=1 (CI)
# builds faster and fuzzes slower: no optimisation, no sanitizer.
set -euo pipefail
cd "$(dirname "$0")"

secs=${FUZZ_SECS:-20}
target_dir=${FUZZ_TARGET_DIR:-target}
if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --locked
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
  build=()
else
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
  build=(--sanitizer none)
fi
if [[ "${FUZZ_QUICK:-}" == 1 ]]; then
  build=(--dev --sanitizer none)
fi
if (($# > 0)); then
  targets=("$@")
else
  mapfile -t targets < <("${fuzz[@]}" list)
fi

"${fuzz[@]}" build "${build[@]}" --target-dir "$target_dir"
for target in "${targets[@]}"; do
  echo "fuzz: $target for ${secs}s"
  mkdir -p "corpus/$target"
  # corpus/<target> gathers what the runs find (not committed); seeds/<target> is ours.
  "${fuzz[@]}" run "${build[@]}" --target-dir "$target_dir" "$target" \
    "corpus/$target" "seeds/$target" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
done
