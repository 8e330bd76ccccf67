#!/usr/bin/env bash
# Compiler-instrumented capture (memsnap-cc + libmemsnap-rt), each figure a ratio of two
# things measured in this one run, on the kernels of tests/kernels built twice with clang
# -O2: plainly, and by memsnap-cc.
#   1. instrumented, writing its trace vs plain: target <= 5x (geometric mean)
#   2. memsnap record through Valgrind (plain binary) vs 1.: target >= 5x
#   3. instrumented, sampling 1M/9M vs plain: target <= 2.5x
#   4. instrumented, run without MEMSNAP_OUT vs plain: target <= 2x
# Traced runs are `memsnap record --via=rt` (the same writer as MEMSNAP_OUT, but a child
# that the shell waits for, so that its CPU time counts). Each figure is given twice: wall
# time (best of 3; Valgrind: one run) and CPU time (user + sys of the program and of
# memsnap, best of 3), which on a shared machine varies far less. On an idle machine the
# writer runs on another core, and the wall ratio of 1. is the smaller.
# MODE=callbacks or MODE=inline picks memsnap-cc's --memsnap-mode (default: its own).
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
memsnap="$build/bin/memsnap"
cc="$build/bin/memsnap-cc"
work=$(mktemp -d /tmp/memsnap-bench-rt-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Sizes: the plain -O2 runs last about half a second or more on a quiet machine, so that
# the ~35 ms a traced run spends starting its writer (exec of memsnap) and resolving sites
# at the end (libdw) stay small (with matmul 320, stencil2d 1200, gather 6000000, the plain
# runs took 0.03-0.12 s and those fixed costs made up most of the traced/plain ratios).
cases=(
  "stream_add 24000000"
  "matmul 640"
  "stencil2d 4800"
  "gather 24000000"
  "linked_list 2400000"
)

measure() { # measure COMMAND...: "wall cpu" of one run, output discarded
  local TIMEFORMAT='%R %U %S' t
  t=$( { time "$@" >/dev/null 2>&1 || true; } 2>&1 | tail -1)
  echo "$t" | awk '{ printf "%.3f %.3f", $1, $2 + $3 }'
}
best() { # best RUNS COMMAND...: the smallest wall and the smallest cpu of RUNS runs
  local runs=$1 w="" c="" t
  shift
  for _ in $(seq "$runs"); do
    t=$(measure "$@")
    w=$(awk -v a="${t% *}" -v b="${w:-${t% *}}" 'BEGIN { print (a < b ? a : b) }')
    c=$(awk -v a="${t#* }" -v b="${c:-${t#* }}" 'BEGIN { print (a < b ? a : b) }')
  done
  echo "$w $c"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

for c in "${cases[@]}"; do
  name=${c%% *}
  clang -O2 -o "$work/plain_$name" "$source_dir/tests/kernels/$name.c"
  "$cc" ${MODE:+--memsnap-mode=$MODE} -O2 -o "$work/rt_$name" "$source_dir/tests/kernels/$name.c"
done

echo "== rt. compiler-instrumented capture (wall/CPU seconds; ratios to the plain -O2 build) =="
printf "%-12s %13s %13s %7s %13s %7s %13s %7s %13s %7s %7s\n" kernel plain trace "x" \
  sampled "x" built-in "x" valgrind "x" "vg/rt"
declare -A sum
for k in trace vg sampled idle; do sum[wall_$k]=0; sum[cpu_$k]=0; done
n=0
for c in "${cases[@]}"; do
  name=${c%% *}; args=${c#* }
  plain=$(best 3 "$work/plain_$name" $args)
  idle=$(best 3 "$work/rt_$name" $args)
  trace=$(best 3 "$memsnap" record -q --via=rt -o "$work/rt.mtr" -- "$work/rt_$name" $args)
  sampled=$(best 3 "$memsnap" record -q --via=rt --sample 1M/9M -o "$work/s.mtr" -- \
    "$work/rt_$name" $args)
  vg=$(best 1 "$memsnap" record -q --via=valgrind -o "$work/vg.mtr" -- "$work/plain_$name" $args)
  row=$(printf "%-12s %13s" "$name" "${plain/ //}")
  for k in trace sampled idle vg; do
    v=${!k}
    if [ "$k" = vg ]; then base_w=${trace% *}; base_c=${trace#* }; else base_w=${plain% *}; base_c=${plain#* }; fi
    rw=$(ratio "${v% *}" "${plain% *}"); rc=$(ratio "${v#* }" "${plain#* }")
    row="$row $(printf "%13s %7s" "${v/ //}" "${rw}/${rc}")"
    if [ "$k" = vg ]; then
      rw=$(ratio "${v% *}" "$base_w"); rc=$(ratio "${v#* }" "$base_c")
      row="$row $(printf "%7s" "${rw}/${rc}")"
    fi
    sum[wall_$k]=$(awk -v s="${sum[wall_$k]}" -v r="$rw" 'BEGIN { print s + log(r) }')
    sum[cpu_$k]=$(awk -v s="${sum[cpu_$k]}" -v r="$rc" 'BEGIN { print s + log(r) }')
  done
  echo "$row"
  n=$((n + 1))
done
figure() { # figure KEY LABEL TARGET
  awk -v w="${sum[wall_$1]}" -v c="${sum[cpu_$1]}" -v n="$n" -v label="$2" -v target="$3" \
    'BEGIN { printf "geometric mean %s %.2fx wall, %.2fx CPU (target %s)\n", label, exp(w / n), exp(c / n), target }'
}
figure trace "rt trace/plain" "<= 5x"
figure vg "valgrind record/rt trace" ">= 5x"
figure sampled "rt sampled 1M/9M/plain" "<= 2.5x"
figure idle "rt built in, no output/plain" "<= 2x"
