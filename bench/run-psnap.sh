#!/usr/bin/env bash
# PSnAP profiles (bench/run.sh runs this with the build folder as $1). Figures, each a ratio
# of two things measured in this one run:
#   1. size: raw stream at 8 bytes per address / profile (target >= 100000x) and the
#      whole run's .mtr / profile (target >= 100x), regular kernels, the default profile
#      (the accesses of the program's executable, not the loader's or libc's) of the same
#      run as the .mtr; raw is the whole run's stream (raw-run) and, for reference, the
#      executable's accesses alone (raw-exe); at the kernels' default sizes and larger ones.
#      Both forms of the profile: the text (.psnap) and the text through zstd -19
#      (.psnap.zst, `memsnap profile -o X.psnap.zst`), the form whose sizes
#      psnap-mills-snavely-carrington.txt reports in Table V (compressed profiles).
#   2. live profiling: memsnap profile -- PROG vs memsnap record -- PROG (target <= 1.2x),
#      default scope and --all-objects
#   3. replay into an in-memory consumer vs decoding the same accesses from a .mtr
#      (target >= 10x), accesses per second (bench_replay)
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
work=$(mktemp -d /tmp/memsnap-psnap-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

# kernel function default-size large-size
cases=(
  "stream_add stream_add 100000 4000000"
  "matmul matmul 150 300"
  "stencil2d jacobi 200 700"
  "stencil3d stencil3d 40 100"
  "transpose transpose 300 1500"
)

source "$(dirname "$0")/common.sh"
accesses_of() { sed -n 's/^accesses \([0-9]*\)$/\1/p' "$1" | head -1; }

echo "== PSnAP 1. profile size (default profile: the executable's accesses; raw = 8 bytes per address) =="
echo "   raw = the whole run's stream, run-acc x 8 bytes; mtr = the .mtr of the same run"
echo "   text = .psnap as written; zst = the same text through zstd -19 (.psnap.zst, as in the paper's Table V)"
printf "%-11s %8s %10s %9s %7s %6s %7s %12s %12s %10s %10s\n" kernel size run-acc exe-acc text-B zst-B mtr-B \
  raw/text raw/zst mtr/text mtr/zst
min_raw_text=""; min_raw_zst=""; min_mtr_text=""; min_mtr_zst=""
minimum() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }'; }
for c in "${cases[@]}"; do
  set -- $c
  for size in "$3" "$4"; do
    tag=$([ "$size" = "$3" ] && echo default || echo large)
    "$memsnap" record -q -o "$work/$1.$tag.mtr" -- "$kernels/$1" "$size" > /dev/null
    "$memsnap" profile -q -o "$work/$1.$tag.psnap" "$work/$1.$tag.mtr"
    "$memsnap" profile -q -o "$work/$1.$tag.psnap.zst" "$work/$1.$tag.mtr"
    n=$(accesses_of "$work/$1.$tag.psnap")
    x=$(sed -n 's/^excluded \([0-9]*\)$/\1/p' "$work/$1.$tag.psnap" | head -1)
    all=$((n + x))
    p=$(stat -c %s "$work/$1.$tag.psnap")
    z=$(stat -c %s "$work/$1.$tag.psnap.zst")
    m=$(stat -c %s "$work/$1.$tag.mtr")
    rt=$(ratio $((all * 8)) "$p"); rz=$(ratio $((all * 8)) "$z")
    mt=$(ratio "$m" "$p"); mz=$(ratio "$m" "$z")
    printf "%-11s %8s %10s %9s %7s %6s %7s %11.0fx %11.0fx %9.1fx %9.1fx  (%s; raw-exe/zst %.0fx)\n" \
      "$1" "$size" "$all" "$n" "$p" "$z" "$m" "$rt" "$rz" "$mt" "$mz" "$tag" "$(ratio $((n * 8)) "$z")"
    min_raw_text=$(minimum "$min_raw_text" "$rt"); min_raw_zst=$(minimum "$min_raw_zst" "$rz")
    min_mtr_text=$(minimum "$min_mtr_text" "$mt"); min_mtr_zst=$(minimum "$min_mtr_zst" "$mz")
  done
done
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { if (v + 0 >= t) print "met"; else printf "NOT met, %.1fx short", t / v }'; }
printf "smallest ratio raw/psnap text %.0fx, compressed %.0fx (target >= 100000x): text %s, compressed %s\n" \
  "$min_raw_text" "$min_raw_zst" "$(verdict "$min_raw_text" 100000)" "$(verdict "$min_raw_zst" 100000)"
printf "smallest ratio mtr/psnap text %.1fx, compressed %.1fx (target >= 100x): text %s, compressed %s\n" \
  "$min_mtr_text" "$min_mtr_zst" "$(verdict "$min_mtr_text" 100)" "$(verdict "$min_mtr_zst" 100)"

echo
echo "== PSnAP 2. live profile vs record (default sizes, seconds, best of 3) =="
printf "%-11s %8s %9s %13s %13s %14s\n" kernel record profile profile-all profile/record all/record
# profile: default scope (the executable); profile-all: --all-objects
best() { local b=""; for i in 1 2 3; do t=$(seconds "$@"); b=$(awk -v a="$t" -v b="$b" 'BEGIN { print (b == "" || a < b) ? a : b }'); done; echo "$b"; }
sum=0; sum_all=0; n=0
for c in "${cases[@]}"; do
  set -- $c
  rec=$(best "$memsnap" record -q -o "$work/t.mtr" -- "$kernels/$1" "$3")
  prof=$(best "$memsnap" profile -q -o "$work/t.psnap" -- "$kernels/$1" "$3")
  all=$(best "$memsnap" profile -q --all-objects -o "$work/t-all.psnap" -- "$kernels/$1" "$3")
  r=$(ratio "$prof" "$rec"); ra=$(ratio "$all" "$rec")
  printf "%-11s %8s %9s %13s %12sx %13sx\n" "$1" "$rec" "$prof" "$all" "$r" "$ra"
  sum=$(awk -v s="$sum" -v r="$r" 'BEGIN { print s + log(r) }')
  sum_all=$(awk -v s="$sum_all" -v r="$ra" 'BEGIN { print s + log(r) }'); n=$((n + 1))
done
awk -v s="$sum" -v t="$sum_all" -v n="$n" 'BEGIN { printf "geometric mean profile/record %.2fx, --all-objects profile/record %.2fx (target <= 1.2x)\n", exp(s / n), exp(t / n) }'

echo
echo "== PSnAP 3. replay vs .mtr decode of the same accesses (large sizes) =="
for c in "${cases[@]}"; do
  set -- $c
  "$memsnap" replay "$work/$1.large.psnap" -o "$work/$1.same.mtr"
  "$build/bench/bench_replay" "$work/$1.large.psnap" "$work/$1.same.mtr"
  rm -f "$work/$1.same.mtr" "$work/$1.large.mtr"
done
