#!/usr/bin/env bash
# Compiler-instrumented capture (memsnap-cc + libmemsnap-rt), each figure a ratio of two
# things measured in this one run, on the kernels of tests/programs built twice with clang
# -O2: plainly, and by memsnap-cc. Times are wall-clock, best of 3 (Valgrind: one run).
#   1. instrumented, writing its trace (MEMSNAP_OUT) vs plain: target <= 5x (geometric mean)
#   2. memsnap record through Valgrind (plain binary) vs 1.: target >= 5x
#   3. instrumented, sampling 1M/9M vs plain: target <= 2.5x
#   4. instrumented, run without MEMSNAP_OUT vs plain: target <= 2x
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
memsnap="$build/bin/memsnap"
cc="$build/bin/memsnap-cc"
work=$(mktemp -d /tmp/memsnap-bench-rt-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Sizes: the plain runs last 0.1-0.3 s, so that the ~35 ms a traced run spends starting
# its writer (exec of memsnap) and resolving sites at the end (libdw) stay small.
cases=(
  "stream_add 8000000"
  "matmul 320"
  "stencil2d 1200"
  "gather 6000000"
  "linked_list 1200000"
)

seconds() { # seconds COMMAND...: wall time of one run, output discarded
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
best3() { # best3 COMMAND...: the fastest of three runs
  local best="" t
  for _ in 1 2 3; do
    t=$(seconds "$@")
    best=$(awk -v a="$t" -v b="${best:-$t}" 'BEGIN { print (a < b ? a : b) }')
  done
  echo "$best"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

for c in "${cases[@]}"; do
  name=${c%% *}
  clang -O2 -o "$work/plain_$name" "$source_dir/tests/programs/$name.c"
  "$cc" -O2 -o "$work/rt_$name" "$source_dir/tests/programs/$name.c"
done

echo "== rt. compiler-instrumented capture (seconds; ratios to the plain -O2 build) =="
printf "%-12s %7s %7s %7s %7s %7s %7s %7s %8s %8s %8s %9s\n" kernel plain \
  trace "x" sampled "x" built-in "x" valgrind "x" "vg/trace" accesses
s_trace=0; s_vg=0; s_sampled=0; s_idle=0; n=0
for c in "${cases[@]}"; do
  name=${c%% *}; args=${c#* }
  plain=$(best3 "$work/plain_$name" $args)
  idle=$(best3 "$work/rt_$name" $args)
  trace=$(best3 env MEMSNAP_OUT="$work/rt.mtr" "$work/rt_$name" $args)
  sampled=$(best3 env MEMSNAP_OUT="$work/sampled.mtr" MEMSNAP_SAMPLE=1M/9M "$work/rt_$name" $args)
  vg=$(seconds "$memsnap" record -q --via=valgrind -o "$work/vg.mtr" -- "$work/plain_$name" $args)
  accesses=$("$memsnap" info "$work/rt.mtr" | sed -n 's/^accesses: *\([0-9]*\).*/\1/p')
  printf "%-12s %7s %7s %7s %7s %7s %7s %7s %8s %8s %8s %9s\n" "$name" "$plain" \
    "$trace" "$(ratio "$trace" "$plain")x" "$sampled" "$(ratio "$sampled" "$plain")x" \
    "$idle" "$(ratio "$idle" "$plain")x" "$vg" "$(ratio "$vg" "$plain")x" \
    "$(ratio "$vg" "$trace")x" "$accesses"
  s_trace=$(awk -v s="$s_trace" -v r="$(ratio "$trace" "$plain")" 'BEGIN { print s + log(r) }')
  s_vg=$(awk -v s="$s_vg" -v r="$(ratio "$vg" "$trace")" 'BEGIN { print s + log(r) }')
  s_sampled=$(awk -v s="$s_sampled" -v r="$(ratio "$sampled" "$plain")" 'BEGIN { print s + log(r) }')
  s_idle=$(awk -v s="$s_idle" -v r="$(ratio "$idle" "$plain")" 'BEGIN { print s + log(r) }')
  n=$((n + 1))
done
awk -v a="$s_trace" -v b="$s_vg" -v c="$s_sampled" -v d="$s_idle" -v n="$n" 'BEGIN {
  printf "geometric mean rt trace/plain %.2fx (target <= 5x)\n", exp(a / n)
  printf "geometric mean valgrind record/rt trace %.2fx (target >= 5x)\n", exp(b / n)
  printf "geometric mean rt sampled 1M/9M/plain %.2fx (target <= 2.5x)\n", exp(c / n)
  printf "geometric mean rt built in, no output/plain %.2fx (target <= 2x)\n", exp(d / n)
}'
