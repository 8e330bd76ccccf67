#!/usr/bin/env bash
# Locality module figures (CPU times), each a ratio measured in this one run (bench/bench_surface.c):
#   - the full 8-width x 17-depth cache surface against one pass of `memsnap sim` with a
#     single 32768/64/8 LRU level over the same in-memory trace (target <= 8x);
#   - the SHARDS-sampled surface at rate 0.01 against the exact one (target >= 20x faster,
#     mean absolute error <= 0.01 over the points of depth >= 256; error at all depths too).
# usage: bench/run-locality.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
work=$(mktemp -d /tmp/memsnap-bench-locality-XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== locality: cache surface and SHARDS sampling (in-memory traces) =="
for c in "matmul 150" "gather 1000000" "random_gather 4194304 4000000"; do
  name=${c%% *}
  "$memsnap" record --quiet -o "$work/$name.mtr" -- "$kernels/$name" ${c#* } > /dev/null
  "$build/bench/bench_surface" "$work/$name.mtr"
done
