#!/usr/bin/env bash
# Memory-signature figures, each a ratio of two things measured in this one run.
#   1. live extraction: `memsnap signature -o x.sig -- KERNEL ARGS` vs `memsnap record -o
#      x.mtr -- KERNEL ARGS` on the large kernel sizes of bench/run.sh, best of 3 runs each
#      (target <= 1.3x: the model must not be the bottleneck of the Valgrind capture)
#   2. the model alone: signature of a recorded trace vs `memsnap sim` of one 32 KiB 8-way
#      level on the same trace (both decode the trace; reported, no target), and the same
#      signature with the narrower widths' rows, exact and by SHARDS at 0.01
#   3. the model alone on the trace held in memory (bench_signature): ns per access and the
#      ratio to a loop over the same records (target: well under 10 ns per access)
# Usage: bench/run-signature.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
work=$(mktemp -d /tmp/memsnap-bench-sig-XXXXXX)
trap 'rm -rf "$work"' EXIT

cases=(
  "stream_add 4000000"
  "matmul 300"
  "stencil2d 700"
  "gather 3000000"
  "linked_list 600000"
)

source "$(dirname "$0")/common.sh"

echo "== signature: live extraction vs recording (large runs, seconds) =="
printf "%-12s %10s %8s %10s %12s\n" kernel args record signature sig/record
sum=0; n=0
for c in "${cases[@]}"; do
  name=${c%% *}; args=${c#* }
  # best of 3, interleaved: on a shared machine a single pair of runs moved by 2x
  rec=1e9; sig=1e9
  for round in 1 2 3; do
    t=$(seconds "$memsnap" record -o "$work/$name.mtr" -- "$kernels/$name" $args)
    rec=$(awk -v a="$rec" -v b="$t" 'BEGIN { printf "%.3f", (b < a ? b : a) }')
    t=$(seconds "$memsnap" signature -o "$work/$name.sig" -- "$kernels/$name" $args)
    sig=$(awk -v a="$sig" -v b="$t" 'BEGIN { printf "%.3f", (b < a ? b : a) }')
  done
  r=$(ratio "$sig" "$rec")
  printf "%-12s %10s %8s %10s %11sx\n" "$name" "$args" "$rec" "$sig" "$r"
  sum=$(awk -v s="$sum" -v r="$r" 'BEGIN { print s + log(r) }'); n=$((n + 1))
done
awk -v s="$sum" -v n="$n" \
  'BEGIN { printf "geometric mean ratio signature/record %.2fx (target <= 1.3x)\n", exp(s / n) }'

echo
echo "== signature model vs one-level sim on the recorded traces (seconds) =="
echo "   +widths: signature --widths (exact rows of widths 4..256), +shards: --widths-shards 0.01"
printf "%-12s %12s %8s %10s %10s %9s %9s %10s\n" kernel accesses sim signature sig/sim \
  +widths +shards shards/sig
for c in "${cases[@]}"; do
  name=${c%% *}
  accesses=$("$memsnap" info "$work/$name.mtr" | sed -n 's/^accesses: *\([0-9]*\).*/\1/p')
  sim=$(seconds "$memsnap" sim --hierarchy 32k/64/8 "$work/$name.mtr")
  sig=$(seconds "$memsnap" signature -o "$work/$name.trace.sig" "$work/$name.mtr")
  wid=$(seconds "$memsnap" signature --widths -o "$work/$name.w.sig" "$work/$name.mtr")
  sha=$(seconds "$memsnap" signature --widths-shards 0.01 -o "$work/$name.s.sig" "$work/$name.mtr")
  printf "%-12s %12s %8s %10s %9sx %9s %9s %9sx\n" "$name" "$accesses" "$sim" "$sig" \
    "$(ratio "$sig" "$sim")" "$wid" "$sha" "$(ratio "$sha" "$sig")"
done

echo
echo "== signature model alone on the recorded traces in memory (bench_signature, CPU time) =="
for c in "${cases[@]}"; do
  name=${c%% *}
  printf "%-12s " "$name"
  "$build/bench/bench_signature" "$work/$name.mtr" | sed 's/$/ (target < 10 ns\/access)/'
done
