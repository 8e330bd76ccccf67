#!/usr/bin/env bash
# memsnap's performance figures, each a ratio of two things measured in this one run.
#   1. recording: memsnap record vs cachegrind --cache-sim=yes (target <= 1.5x) and vs
#      lackey --trace-mem=yes > /dev/null (target: memsnap >= 10x faster)
#   2. trace size: bytes per access (target <= 2 on the regular kernels) and .mtr size vs
#      zstd -19 of the same accesses as plain 16-byte records (target < 1); 2b. the .mtr
#      writer's CPU time per access vs the in-memory loop (no target of its own: it bounds
#      both capture paths, see run-rt.sh)
#   3. simulation: 3-level hierarchy vs a loop reading the same in-memory records (target
#      <= 12x); 46 hierarchies in one pass vs 46 passes (target < 1)
#   4. reading: .mtr decode vs the in-memory loop (target <= 4x)
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
work=$(mktemp -d /tmp/memsnap-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Each kernel at three sizes: "name small | medium | large". Small runs are what zstd -19
# compresses in seconds (the size comparison); medium runs are what Lackey traces in
# seconds; large runs make Valgrind's start-up (~0.4 s) small next to the work compared.
cases=(
  "stream_add 100000 | 1000000 | 4000000"
  "matmul 100 | 150 | 300"
  "stencil2d 200 | 400 | 700"
  "gather 100000 | 1000000 | 3000000"
  "linked_list 50000 | 400000 | 600000"
)
regular="stream_add matmul stencil2d"

source "$(dirname "$0")/common.sh"
json_count() { sed -n 's/.*"accesses": *\([0-9]*\).*/\1/p' | head -1; }
name_of() { echo "${1%% *}"; }
small_args() { local a=${1#* }; echo "${a%%|*}"; }
medium_args() { local a=${1#*|}; echo "${a%%|*}"; }
large_args() { echo "${1##*|}"; }

echo "== 1a. recording vs cachegrind --cache-sim=yes (large runs, seconds) =="
printf "%-12s %10s %8s %10s %8s %10s\n" kernel args native cachegrind record record/cg
sum=0; n=0
for c in "${cases[@]}"; do
  name=$(name_of "$c"); args=$(large_args "$c")
  native=$(seconds "$kernels/$name" $args)
  cg=$(seconds valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null "$kernels/$name" $args)
  rec=$(seconds "$memsnap" record -o "$work/$name.large.mtr" -- "$kernels/$name" $args)
  r=$(ratio "$rec" "$cg")
  printf "%-12s %10s %8s %10s %8s %9sx\n" "$name" "$args" "$native" "$cg" "$rec" "$r"
  sum=$(awk -v s="$sum" -v r="$r" 'BEGIN { print s + log(r) }'); n=$((n + 1))
done
awk -v s="$sum" -v n="$n" 'BEGIN { printf "geometric mean record/cachegrind %.2fx (target <= 1.5x)\n", exp(s / n) }'

echo
echo "== 1b. lackey --trace-mem=yes > /dev/null vs recording (medium runs, seconds) =="
printf "%-12s %10s %8s %8s %14s\n" kernel args lackey record lackey/record
sum=0; n=0
for c in "${cases[@]}"; do
  name=$(name_of "$c"); args=$(medium_args "$c")
  lk=$(seconds sh -c 'valgrind --tool=lackey --trace-mem=yes "$@" > /dev/null 2>&1' sh "$kernels/$name" $args)
  rec=$(seconds "$memsnap" record -o "$work/$name.medium.mtr" -- "$kernels/$name" $args)
  r=$(ratio "$lk" "$rec")
  printf "%-12s %10s %8s %8s %13sx\n" "$name" "$args" "$lk" "$rec" "$r"
  sum=$(awk -v s="$sum" -v r="$r" 'BEGIN { print s + log(r) }'); n=$((n + 1))
done
awk -v s="$sum" -v n="$n" 'BEGIN { printf "geometric mean lackey/record %.1fx (target >= 10x)\n", exp(s / n) }'

echo
echo "== 2. trace size (small runs; large runs' bytes/access in the last column) =="
printf "%-12s %10s %10s %12s %12s %11s %14s\n" kernel accesses mtr-bytes bytes/access zstd-19-bytes mtr/zstd-19 large:bytes/acc
for c in "${cases[@]}"; do
  name=$(name_of "$c")
  mtr="$work/$name.mtr"
  "$memsnap" record --quiet -o "$mtr" -- "$kernels/$name" $(small_args "$c") > /dev/null
  accesses=$("$memsnap" info --json "$mtr" | json_count)
  bytes=$(stat -c %s "$mtr")
  "$build/bench/bench_raw" "$mtr" "$work/$name.raw"
  zstd -q -19 -T1 -f "$work/$name.raw" -o "$work/$name.raw.zst"
  zbytes=$(stat -c %s "$work/$name.raw.zst")
  rm -f "$work/$name.raw" "$work/$name.raw.zst"
  large_accesses=$("$memsnap" info --json "$work/$name.large.mtr" | json_count)
  large_bytes=$(stat -c %s "$work/$name.large.mtr")
  tag=""; case " $regular " in *" $name "*) tag="  (regular: target <= 2 bytes/access)";; esac
  printf "%-12s %10s %10s %12s %12s %10sx %14s%s\n" "$name" "$accesses" "$bytes" \
    "$(awk -v a="$bytes" -v b="$accesses" 'BEGIN { printf "%.4f", a / b }')" "$zbytes" \
    "$(ratio "$bytes" "$zbytes")" \
    "$(awk -v a="$large_bytes" -v b="$large_accesses" 'BEGIN { printf "%.4f", a / b }')" "$tag"
done

echo
echo "== 2b. writing .mtr: encode + compress the large runs' records (bench_write, CPU time) =="
for c in "${cases[@]}"; do
  "$build/bench/bench_write" "$work/$(name_of "$c").large.mtr" "$work/write.mtr"
done
rm -f "$work/write.mtr"

echo
echo "== 3. simulation =="
for name in matmul gather; do
  "$build/bench/bench_sim" "$work/$name.large.mtr"
done

echo
echo "== 4. reading .mtr =="
for c in "${cases[@]}"; do
  "$build/bench/bench_read" "$work/$(name_of "$c").large.mtr"
done

# Each later module adds its figures as bench/run-MODULE.sh BUILD_DIR.
here=$(cd "$(dirname "$0")" && pwd)
for extra in "$here"/run-*.sh; do
  [ -e "$extra" ] || continue
  echo
  bash "$extra" "$build"
done
