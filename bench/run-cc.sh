#!/usr/bin/env bash
# Where memsnap-cc's per-access capture spends its time, on two application-sized codes:
# bench/cg.c (CG on a random sparse matrix, 3.4 M nonzeros, 20 iterations) and
# tests/kernels/matmul_blocked.c (a tiled dense multiply, i-k-j order inside 24 x 24
# tiles, n = 960), each built with clang -O2 and with memsnap-cc -O2, and run
#   plain     the clang -O2 build
#   built-in  the memsnap-cc build, MEMSNAP_OUT unset (every callback returns at once)
#   traced    the memsnap-cc build traced into a .mtr by `memsnap record --via=rt` (the
#             writer that MEMSNAP_OUT starts, but as a child, so that its time counts)
# Each row: best of RUNS (default 3) of wall and CPU seconds (user + sys of the program
# and the writer), the CPU ratio to plain, and the extra CPU per access recorded in ns
# (the accesses counted by `memsnap info` on the traced run's .mtr). docs/rt.md reads
# these figures, with perf profiles (cpu-clock: no hardware counters on the VM it was
# measured on).
# MODE=callbacks or MODE=inline picks memsnap-cc's --memsnap-mode (default: its own).
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
source_dir=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3}
cc="$build/bin/memsnap-cc"
work=$(mktemp -d /tmp/memsnap-bench-cc-XXXXXX)
trap 'rm -rf "$work"' EXIT

cases=(
  "cg $source_dir/bench/cg.c 200000 16 20"
  "matmul_blocked $source_dir/tests/kernels/matmul_blocked.c 960"
)

measure() { # measure COMMAND...: "wall cpu" of one run, output discarded
  local TIMEFORMAT='%R %U %S' t
  t=$( { time "$@" >/dev/null 2>&1 || true; } 2>&1 | tail -1)
  echo "$t" | awk '{ printf "%.3f %.3f", $1, $2 + $3 }'
}
best() { # best COMMAND...: the smallest wall and the smallest cpu of $runs runs
  local w="" c="" t
  for _ in $(seq "$runs"); do
    t=$(measure "$@")
    w=$(awk -v a="${t% *}" -v b="${w:-${t% *}}" 'BEGIN { print (a < b ? a : b) }')
    c=$(awk -v a="${t#* }" -v b="${c:-${t#* }}" 'BEGIN { print (a < b ? a : b) }')
  done
  echo "$w $c"
}
printf "%-15s %-9s %8s %8s %6s %10s %12s\n" code run wall cpu "x cpu" accesses "ns/access"
for c in "${cases[@]}"; do
  read -r name source args <<<"$c"
  clang -O2 -g -o "$work/plain_$name" "$source"
  "$cc" ${MODE:+--memsnap-mode=$MODE} -O2 -g -o "$work/rt_$name" "$source"
  # shellcheck disable=SC2086
  plain=$(best "$work/plain_$name" $args)
  # shellcheck disable=SC2086,SC2034 # (read through ${!run} below)
  idle=$(best "$work/rt_$name" $args)
  # shellcheck disable=SC2086,SC2034 # (read through ${!run} below)
  traced=$(best "$build/bin/memsnap" record -q --via=rt -o "$work/t.mtr" -- "$work/rt_$name" $args)
  accesses=$("$build/bin/memsnap" info "$work/t.mtr" | awk '/^accesses:/ { print $2 }')
  for run in plain idle traced; do
    t=${!run}
    printf "%-15s %-9s %8s %8s %6s %10s %12s\n" "$name" "${run/idle/built-in}" "${t% *}" "${t#* }" \
      "$(awk -v a="${t#* }" -v b="${plain#* }" 'BEGIN { printf "%.2f", a / b }')" "$accesses" \
      "$(awk -v a="${t#* }" -v b="${plain#* }" -v n="$accesses" 'BEGIN { printf "%.2f", (a - b) * 1e9 / n }')"
  done
done
