#!/usr/bin/env bash
# memsnap on realistic codes rather than the test kernels: a GUPS-like random-access
# update kernel and a CG solver on a random sparse matrix (bench/gups.c, bench/cg.c, built
# with cc -O2 -g), and Debian programs on real inputs (gzip, bzip2, xz of a text file
# made of /usr/lib/python3 sources and /usr/share/common-licenses; sort of it; a python3
# loop; sqlite3 if installed). For each:
#   1. time: memsnap record vs valgrind --tool=cachegrind --cache-sim=yes, runs
#      interleaved, best of 3 wall times each;
#   2. misses: memsnap sim --model cachegrind (D1 32768/64/8, LL 8388608/64/16) on the
#      recorded trace vs the Cachegrind run's D1 and LL data misses (same geometry), both
#      run as a user would, one after the other in this shell (docs/accuracy.md says why
#      they differ slightly);
#      Cachegrind's own run-to-run spread of D1 misses over its 3 runs is printed beside;
#   3. size (smaller runs, as in run.sh section 2): .mtr bytes per access, and the .mtr vs
#      `zstd -19` and `xz -9` of the same accesses as plain 16-byte records (python3 left
#      out: its start-up alone is 7.8 M accesses, minutes of xz -9).
# Programs whose runs differ from run to run would make the comparison of misses
# meaningless: python3 runs with PYTHONHASHSEED=0, sqlite3's rows are computed, not random.
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
memsnap="$build/bin/memsnap"
work=$(mktemp -d /tmp/memsnap-bench-real-XXXXXX)
trap 'rm -rf "$work"' EXIT
source "$here/common.sh"
export LC_ALL=C

cc -O2 -g -o "$work/gups" "$here/gups.c"
cc -O2 -g -o "$work/cg" "$here/cg.c"
# Text: Python's library sources, then licenses, in name order (the same on every Debian
# 12 with python3). Timed runs read 512 KiB of it (bzip2, xz: 128 KiB; their work per byte
# is larger), size runs 4 KiB, so that zstd -19 and xz -9 compress the records (0.1-1.3 M
# accesses) in seconds.
head -c 524288 < <(cat /usr/lib/python3*/*.py /usr/share/common-licenses/* 2> /dev/null) > "$work/text"
head -c 131072 "$work/text" > "$work/text128k"
head -c 4096 "$work/text" > "$work/text4k"
export PYTHONHASHSEED=0
py_loop() { printf 's = {}\nfor i in range(%d):\n    s[i %% 5003] = s.get(i %% 5003, 0) + i * i\nprint(len(s))\n' "$1"; }
sql() {
  printf '%s\n' "create table t(k integer primary key, v text);" \
    "with recursive c(i) as (select 1 union all select i + 1 from c where i < $1)" \
    "insert into t select i, printf('%08x', (i * 2654435761) % 4294967296) from c;" "create index tv on t(v);" \
    "select count(*), sum(length(v)) from t where v > (select v from t where k = 7);"
}

# Each case: timed_NAME and small_NAME run the program after their arguments (a command
# prefix), in $work.
timed_gups() { "$@" ./gups 22 4000000; } # 32 MiB table, 4 M updates
small_gups() { "$@" ./gups 16 400000; }
timed_cg() { "$@" ./cg 65536 16 4; } # 1.1 M nonzeros, 4 iterations
small_cg() { "$@" ./cg 1024 16 2; }
timed_gzip() { "$@" gzip -c text; }
small_gzip() { "$@" gzip -c text4k; }
timed_bzip2() { "$@" bzip2 -c text128k; }
small_bzip2() { "$@" bzip2 -c text4k; }
timed_xz() { "$@" xz -1 -c text128k; }
small_xz() { "$@" xz -1 -c text4k; }
timed_sort() { "$@" sort text; }
small_sort() { "$@" sort text4k; }
timed_python3() { "$@" /usr/bin/python3 -c "$(py_loop 20000)"; }
timed_sqlite3() { "$@" sqlite3 :memory: "$(sql 5000)"; }
small_sqlite3() { "$@" sqlite3 :memory: "$(sql 50)"; }
cases=(gups cg gzip bzip2 xz sort python3)
if command -v sqlite3 > /dev/null; then cases+=(sqlite3); fi
cachegrind=(valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL=8388608,16,64)

echo "== real. realistic codes: record vs cachegrind (wall s, best of 3, interleaved), misses vs cachegrind, size =="
printf "%-8s %9s %8s %8s %7s %12s %12s %8s %9s %10s %10s %8s\n" program accesses cachegrind \
  record rec/cg "D1 memsnap" "D1 cg" "D1 diff" "cg spread" "LL memsnap" "LL cg" "LL diff"
sum=0
n=0
cd "$work"
for name in "${cases[@]}"; do
  cg_best="" rec_best=""
  for run in 1 2 3; do
    t=$("timed_$name" seconds "${cachegrind[@]}" --cachegrind-out-file="$work/$name.cg$run")
    cg_best=$(awk -v a="$t" -v b="${cg_best:-$t}" 'BEGIN { print (a < b ? a : b) }')
    t=$("timed_$name" seconds "$memsnap" record --quiet -o "$work/$name.mtr" --)
    rec_best=$(awk -v a="$t" -v b="${rec_best:-$t}" 'BEGIN { print (a < b ? a : b) }')
  done
  accesses=$("$memsnap" info --json "$work/$name.mtr" | sed -n 's/.*"accesses": *\([0-9]*\).*/\1/p' | head -1)
  read -r d1_ms ll_ms < <("$memsnap" sim --model cachegrind -H 32768/64/8,8388608/64/16 \
    "$work/$name.mtr" 2> /dev/null | awk '$1 == "L1" { d = $4 } $1 == "L2" { l = $4 } END { print d, l }')
  # Cachegrind's summary: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
  read -r d1_cg ll_cg < <(awk '/^summary:/ { print $6 + $9, $7 + $10 }' "$work/$name.cg3")
  spread=$(awk '/^summary:/ { d = $6 + $9; lo = (lo == "" || d < lo) ? d : lo; hi = d > hi ? d : hi }
    END { printf "%.3f", 100 * (hi - lo) / lo }' "$work/$name".cg[123])
  r=$(ratio "$rec_best" "$cg_best")
  printf "%-8s %9s %8s %8s %6sx %12s %12s %7s%% %8s%% %10s %10s %7s%%\n" "$name" "$accesses" \
    "$cg_best" "$rec_best" "$r" "$d1_ms" "$d1_cg" \
    "$(awk -v a="$d1_ms" -v b="$d1_cg" 'BEGIN { printf "%+.3f", 100 * (a - b) / b }')" "$spread" \
    "$ll_ms" "$ll_cg" "$(awk -v a="$ll_ms" -v b="$ll_cg" 'BEGIN { printf "%+.2f", 100 * (a - b) / b }')"
  sum=$(awk -v s="$sum" -v r="$r" 'BEGIN { print s + log(r) }')
  n=$((n + 1))
  rm -f "$work/$name".cg[123]
done
awk -v s="$sum" -v n="$n" 'BEGIN { printf "geometric mean record/cachegrind %.2fx\n", exp(s / n) }'

echo
printf "%-8s %9s %10s %11s %10s %10s %9s %9s %14s\n" program accesses mtr-bytes bytes/access \
  zstd-19 xz-9 mtr/zstd mtr/xz "timed bytes/acc"
for name in "${cases[@]}"; do
  [ "$name" = python3 ] && continue
  "small_$name" "$memsnap" record --quiet -o "$work/small.mtr" -- > /dev/null
  accesses=$("$memsnap" info --json "$work/small.mtr" | sed -n 's/.*"accesses": *\([0-9]*\).*/\1/p' | head -1)
  bytes=$(stat -c %s "$work/small.mtr")
  "$build/bench/bench_raw" "$work/small.mtr" "$work/small.raw"
  zstd -q -19 -T1 -f "$work/small.raw" -o "$work/small.raw.zst" &
  xz -9 -T1 -c "$work/small.raw" > "$work/small.raw.xz"
  wait
  zbytes=$(stat -c %s "$work/small.raw.zst")
  xbytes=$(stat -c %s "$work/small.raw.xz")
  timed_accesses=$("$memsnap" info --json "$work/$name.mtr" | sed -n 's/.*"accesses": *\([0-9]*\).*/\1/p' | head -1)
  printf "%-8s %9s %10s %11s %10s %10s %8sx %8sx %14s\n" "$name" "$accesses" "$bytes" \
    "$(awk -v a="$bytes" -v b="$accesses" 'BEGIN { printf "%.4f", a / b }')" "$zbytes" "$xbytes" \
    "$(ratio "$bytes" "$zbytes")" "$(ratio "$bytes" "$xbytes")" \
    "$(awk -v a="$(stat -c %s "$work/$name.mtr")" -v b="$timed_accesses" 'BEGIN { printf "%.4f", a / b }')"
  rm -f "$work/small.mtr" "$work/small.raw" "$work/small.raw.zst" "$work/small.raw.xz" "$work/$name.mtr"
done
