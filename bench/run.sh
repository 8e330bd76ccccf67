#!/usr/bin/env bash
# memsnap's performance figures, each a ratio of two things measured in this one run.
#   1. recording: memsnap record vs cachegrind --cache-sim=yes (target <= 1.5x) and vs
#      lackey --trace-mem=yes > /dev/null (target: memsnap >= 10x faster)
#   2. trace size: bytes per access (target <= 2 on the regular kernels) and .mtr size vs
#      zstd -19 of the same accesses as plain 16-byte records (target < 1)
#   3. simulation: 3-level hierarchy vs a loop reading the same in-memory records (target
#      <= 12x); 46 hierarchies in one pass vs 46 passes (target < 1)
#   4. reading: .mtr decode vs the in-memory loop (target <= 4x)
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/programs"
work=$(mktemp -d /tmp/memsnap-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Bench-sized runs of the test kernels: "name args".
cases=(
  "stream_add 2000000"
  "matmul 200"
  "stencil2d 600"
  "gather 1000000"
  "linked_list 300000"
)
regular="stream_add matmul stencil2d"

seconds() { # seconds COMMAND...: wall time of one run, output discarded
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

echo "== 1. recording (seconds, one run each) =="
printf "%-12s %8s %10s %8s %8s %14s %14s\n" kernel native cachegrind lackey record record/cg lackey/record
sum_cg=0; sum_lk=0; n=0
for c in "${cases[@]}"; do
  set -- $c; name=$1; shift
  native=$(seconds "$kernels/$name" "$@")
  cg=$(seconds valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null "$kernels/$name" "$@")
  lk=$(seconds sh -c 'valgrind --tool=lackey --trace-mem=yes "$@" > /dev/null 2>&1' sh "$kernels/$name" "$@")
  rec=$(seconds "$memsnap" record -o "$work/$name.mtr" -- "$kernels/$name" "$@")
  r1=$(ratio "$rec" "$cg"); r2=$(ratio "$lk" "$rec")
  printf "%-12s %8s %10s %8s %8s %13sx %13sx\n" "$name" "$native" "$cg" "$lk" "$rec" "$r1" "$r2"
  sum_cg=$(awk -v s="$sum_cg" -v r="$r1" 'BEGIN { print s + log(r) }')
  sum_lk=$(awk -v s="$sum_lk" -v r="$r2" 'BEGIN { print s + log(r) }')
  n=$((n + 1))
done
awk -v a="$sum_cg" -v b="$sum_lk" -v n="$n" 'BEGIN {
  printf "geometric mean: record/cachegrind %.2fx (target <= 1.5x), lackey/record %.1fx (target >= 10x)\n", exp(a / n), exp(b / n) }'

echo
echo "== 2. trace size =="
printf "%-12s %12s %12s %12s %14s %12s\n" kernel accesses mtr-bytes bytes/access zstd-19-bytes mtr/zstd-19
for c in "${cases[@]}"; do
  set -- $c; name=$1
  mtr="$work/$name.mtr"
  accesses=$("$memsnap" info --json "$mtr" | sed -n 's/.*"accesses": *\([0-9]*\).*/\1/p' | head -1)
  bytes=$(stat -c %s "$mtr")
  "$build/bench/bench_raw" "$mtr" "$work/$name.raw"
  zstd -q -19 -T1 -f "$work/$name.raw" -o "$work/$name.raw.zst"
  zbytes=$(stat -c %s "$work/$name.raw.zst")
  rm -f "$work/$name.raw" "$work/$name.raw.zst"
  tag=""; case " $regular " in *" $name "*) tag=" (regular: target <= 2)";; esac
  printf "%-12s %12s %12s %12s %14s %11sx%s\n" "$name" "$accesses" "$bytes" \
    "$(ratio "$bytes" "$accesses")" "$zbytes" "$(ratio "$bytes" "$zbytes")" "$tag"
done

echo
echo "== 3. simulation =="
for name in matmul gather; do
  "$build/bench/bench_sim" "$work/$name.mtr"
done

echo
echo "== 4. reading .mtr =="
for c in "${cases[@]}"; do
  set -- $c
  "$build/bench/bench_read" "$work/$1.mtr"
done
