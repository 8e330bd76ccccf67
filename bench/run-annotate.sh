#!/usr/bin/env bash
# memsnap annotate against memsnap sim on the same trace and hierarchy (nehalem): the
# annotation's per-site counting and its rows by function and line cost at most 1.3x the
# simulation (issue 22's bar). Best of three runs of each, alternated.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
work=$(mktemp -d /tmp/memsnap-bench-annotate-XXXXXX)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/common.sh"


echo "== annotate vs sim (nehalem, best of 3, seconds; bar: annotate/sim <= 1.3, by code and by object) =="
printf "%-12s %12s %8s %9s %13s %10s %11s\n" trace accesses sim annotate annotate/sim by-object object/sim
for k in "gather 3000000" "two_arrays 2000000" "cg" "bintree"; do
  name=${k%% *}; args=${k#"$name"}
  "$memsnap" record -q --objects -o "$work/$name.mtr" -- "$kernels/$name" $args > /dev/null
  accesses=$("$memsnap" info --json "$work/$name.mtr" | sed -n 's/.*"accesses": *\([0-9]*\).*/\1/p' | head -1)
  s=""; a=""; o=""
  for _ in 1 2 3; do
    t=$(seconds "$memsnap" sim -H nehalem -o /dev/null "$work/$name.mtr")
    s=$(awk -v a="$t" -v b="$s" 'BEGIN { print (b == "" || a < b) ? a : b }')
    t=$(seconds "$memsnap" annotate -H nehalem -o /dev/null "$work/$name.mtr")
    a=$(awk -v x="$t" -v b="$a" 'BEGIN { print (b == "" || x < b) ? x : b }')
    t=$(seconds "$memsnap" annotate -H nehalem --by object -o /dev/null "$work/$name.mtr")
    o=$(awk -v x="$t" -v b="$o" 'BEGIN { print (b == "" || x < b) ? x : b }')
  done
  printf "%-12s %12s %8s %9s %12sx %10s %10sx\n" "$name" "$accesses" "$s" "$a" "$(ratio "$a" "$s")" "$o" "$(ratio "$o" "$s")"
done
