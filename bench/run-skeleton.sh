#!/usr/bin/env bash
# Memory skeletons of the test kernels against the kernels themselves (issue 20's bars),
# bench/run.sh runs this with the build folder as $1 (KERNELS="matmul gather" restricts
# it). Per kernel, at a size of 10-50 M accesses: record its trace, make a skeleton with
# the defaults (10 slices or fewer of at least 1 Mi accesses, ratio 10, 32-byte lines,
# clusters of 256) in both forms,
# compile each with cc -O2, and:
#   L1, L2    mean and max absolute hit-rate difference over the 46 hierarchies, points:
#             `memsnap compare TRACE -- ./skeleton` (the skeleton's whole run, its start-up
#             included; bars L1 mean <= 0.5, max <= 2; L2 mean <= 1)
#   own%      the skeleton's accesses that are not the slices' (table loads, register
#             saves, its own start-up), % of its recorded accesses (bar <= 2)
#   time      the skeleton's native run / the kernel's native run, best of 3 (bar <= 1/8)
#   gen/sim   `memsnap skeleton` / `memsnap sim` on the same trace (bar <= 1)
#   cc        seconds GCC -O2 took to compile the skeleton (the code form only when its
#             table has at most 60000 words)
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
work=$(mktemp -d /tmp/memsnap-skeleton-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/common.sh"

cases=(
  "stream_add 4000000"
  "stencil2d 1000"
  "stencil3d 100"
  "matmul 200"
  "transpose 2000"
  "gather 3000000"
  "spmv 300000"
  "linked_list 600000"
)
best() { # best COMMAND...: the least of 3 wall times
  local a b c
  a=$(seconds "$@"); b=$(seconds "$@"); c=$(seconds "$@")
  printf "%s\n%s\n%s\n" "$a" "$b" "$c" | sort -n | head -1
}
field() { awk -v n="$2" "/$1/ { print \$n * 100; exit }" "$3"; }

printf "%-12s %-5s %9s %7s %7s %7s %7s %6s %7s %7s %6s\n" kernel form accesses L1mean L1max \
  L2mean L2max own% time gen/sim cc-s
printf "%-12s %-5s %9s %7s %7s %7s %7s %6s %7s %7s %6s\n" "(bar)" "" "" "<=0.5" "<=2" "<=1" "" \
  "<=2" "<=0.125" "<=1" ""
for c in "${cases[@]}"; do
  name=${c%% *}; args=${c#* }
  if [ -n "${KERNELS:-}" ] && [[ " $KERNELS " != *" $name "* ]]; then continue; fi
  trace="$work/$name.mtr"
  # shellcheck disable=SC2086
  "$memsnap" record -q -o "$trace" -- "$kernels/$name" $args > /dev/null
  accesses=$("$memsnap" info "$trace" | awk '/^accesses:/ { print $2 }')
  # shellcheck disable=SC2086
  native=$(best "$kernels/$name" $args)
  sim=$(seconds "$memsnap" sim --all-catalog "$trace")
  words=$("$memsnap" skeleton -o /dev/null "$trace" 2>&1 | sed -n 's/.* \([0-9]*\) table words.*/\1/p')
  for form in table code; do
    skel="$work/$name.$form"
    # the code form compiles at about 1 ms per word (GCC -O2; stencil2d's 250 k words took
    # over 6 minutes and 3.4 GB): only the smaller skeletons
    if [ "$form" = code ] && [ "$words" -gt 60000 ]; then
      printf "%-12s %-5s %9s  (%s words: not compiled)\n" "$name" "$form" "$accesses" "$words"
      continue
    fi
    gen=$(seconds "$memsnap" skeleton -q --form "$form" -o "$skel.c" "$trace")
    t0=$(date +%s.%N)
    cc -O2 -o "$skel" "$skel.c"
    cc_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    "$memsnap" compare "$trace" -- "$skel" > "$skel.compare" 2>&1
    "$memsnap" record -q -o "$skel.mtr" -- "$skel" > /dev/null 2>&1
    total=$("$memsnap" info "$skel.mtr" | awk '/^accesses:/ { print $2 }')
    kept=$("$memsnap" skeleton --form "$form" -o /dev/null "$trace" 2>&1 |
      sed -n 's/.*(\([0-9]*\) of the run.*/\1/p')
    own=$(awk -v t="$total" -v k="$kept" 'BEGIN { printf "%.2f", (t > 0 ? 100 * (t - k) / t : 0) }')
    skel_time=$(best "$skel")
    printf "%-12s %-5s %9s %7.2f %7.2f %7.2f %7.2f %6s %7s %7s %6s\n" "$name" "$form" "$accesses" \
      "$(field '^  L1 mean' 3 "$skel.compare")" "$(field '^  L1 mean' 5 "$skel.compare")" \
      "$(field '^  L2 mean' 3 "$skel.compare")" "$(field '^  L2 mean' 5 "$skel.compare")" \
      "$own" "$(ratio "$skel_time" "$native")" "$(ratio "$gen" "$sim")" "$cc_s"
    rm -f "$skel.mtr" "$skel"
  done
  rm -f "$trace"
done
