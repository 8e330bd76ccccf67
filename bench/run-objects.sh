#!/usr/bin/env bash
# What capturing data objects costs (issue 22's bar: <= 1.05x today's record on an
# allocation-heavy program): memsnap record --objects (allocations wrapped by the tool's
# preload library, mappings, statics) against memsnap record, runs alternated, median of 5.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
work=$(mktemp -d /tmp/memsnap-bench-objects-XXXXXX)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/common.sh"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "== capturing data objects: record --objects vs record (median of 5, seconds; bar <= 1.05) =="
printf "%-28s %12s %9s %9s %8s %10s\n" program allocations record --objects ratio accesses+
text="$work/text"
for f in /usr/share/common-licenses/*; do [ -L "$f" ] || cat "$f"; done > "$text"
while IFS='|' read -r name command; do
  a=(); b=()
  for _ in 1 2 3 4 5; do
    b+=("$(seconds "$memsnap" record -q -o "$work/b.mtr" -- $command)")
    a+=("$(seconds "$memsnap" record -q --objects -o "$work/a.mtr" -- $command)")
  done
  tb=$(printf "%s\n" "${b[@]}" | median); ta=$(printf "%s\n" "${a[@]}" | median)
  allocations=$("$memsnap" info --json "$work/a.mtr" | sed -n 's/.*"allocations": *\([0-9]*\).*/\1/p')
  na=$("$memsnap" info --json "$work/a.mtr" | sed -n 's/^  "accesses": *\([0-9]*\).*/\1/p')
  nb=$("$memsnap" info --json "$work/b.mtr" | sed -n 's/^  "accesses": *\([0-9]*\).*/\1/p')
  printf "%-28s %12s %9s %9s %7sx %10s\n" "$name" "${allocations:-0}" "$tb" "$ta" "$(ratio "$ta" "$tb")" "$((na - nb))"
done << EOF2
bintree (kernel)|$kernels/bintree
hashtab (kernel)|$kernels/hashtab
sort -k2 (237 KB of text)|/usr/bin/sort --parallel=1 -k2 $text
EOF2
echo "(accesses+: what --objects adds to the trace: the loader's work for one more library;"
echo " the wrappers add none)"
