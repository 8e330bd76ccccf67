#!/usr/bin/env bash
# PSnAP profiles of the application workload set (bench/workloads.sh) against the bars
# profiles are judged on (bench/run.sh runs this with the build folder as $1; APPS="adi cg"
# restricts it to some workloads; all 17 took 28 minutes on 2 CPUs shared with other work,
# most of it in verify's 46 hierarchies and the best-of-3 live runs). For every workload,
# at its small and large arguments:
# record, profile (text and .psnap.zst), verify; then one table per workload:
#   exact     exact-match rate of the replay in program order (memsnap verify)
#   L1, L2    mean and max absolute hit-rate error over the 46 hierarchies, points
#             (bars: L1 mean <= 1.0, max <= 3.5; L2 mean <= 1.5, max <= 5)
#   size      profile / .mtr of the same run, text and zstd forms (bar: <= 1/10, judged on
#             the zstd form, as the .mtr is compressed too); growth: large / small profile
#             (bar: <= +10% for a 4x longer run; "x-acc" says how much longer it was)
#   time      live `memsnap profile -- PROG` / `memsnap record -- PROG`, small arguments,
#             runs interleaved, best of 3 each (bar <= 1.2x); wall times on a shared
#             machine are noisy
#   memory    peak RSS of those runs (largest process of each: Valgrind's or memsnap's),
#             profile / record (bar <= 4x)
#   replay    replay of the small profile / decode of a .mtr of the same accesses, both in
#             accesses per second (bench_replay, sum consumer; bar >= 1x); the small one
#             because replay through a lossy order runs at 2-15 M accesses/s, and
#             bench_replay's passes of a large one took minutes
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
memsnap="$build/bin/memsnap"
work=$(mktemp -d /tmp/memsnap-apps-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
source "$here/workloads.sh"
export LC_ALL=C # sort's collation, the same on every machine

# LAMMPS is a real HPC application in Debian's packages; the workload set holds it when it
# is installed (a bench-only package: make check and make demo do not need it)
MEMSNAP_DEPS=lammps "$here/../scripts/install-deps.sh" ||
  echo "run-apps: lammps could not be installed: its workload is left out"
apps_inputs "$work/inputs"
apps_define "$build/tests/kernels" "$work/inputs"

# field LINE-PATTERN N FILE: the Nth word of the first line matching the pattern
field() { awk -v n="$2" "/$1/ { print \$n; exit }" "$3"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
# verdict VALUE BAR [le|ge]: "met" or "missed by X"
verdict() {
  awk -v v="$1" -v t="$2" -v how="${3:-le}" 'BEGIN {
    if (v == "") { print "n/a"; exit }
    if ((how == "le" && v + 0 <= t + 0) || (how == "ge" && v + 0 >= t + 0)) print "met";
    else printf "missed by %.3g\n", (how == "le" ? v - t : t - v) }'
}
# timed OUT COMMAND...: appends "seconds max-rss-KiB" of one run to OUT
timed() {
  local out=$1
  shift
  /usr/bin/time -f "%e %M" -o "$work/time.tmp" "$@" > /dev/null 2>&1 || true
  cat "$work/time.tmp" >> "$out"
}
best_time() { sort -n "$1" | head -1 | cut -d' ' -f1; }
peak_rss() { sort -k2 -n "$1" | tail -1 | cut -d' ' -f2; }

# measure NAME TAG PROGRAM ARGS PROFILE-OPTIONS: record, profile, verify; leaves
# $work/NAME.TAG.{mtr,psnap,psnap.zst,verify}
measure() {
  local name=$1 tag=$2 program=$3 args=$4 options=$5 base="$work/$1.$2"
  # shellcheck disable=SC2086
  "$memsnap" record -q -o "$base.mtr" -- "$program" $args > /dev/null
  # shellcheck disable=SC2086
  "$memsnap" profile -q $options -o "$base.psnap" "$base.mtr"
  # shellcheck disable=SC2086
  "$memsnap" profile -q $options -o "$base.psnap.zst" "$base.mtr"
  "$memsnap" verify --sites 5 "$base.psnap" "$base.mtr" > "$base.verify"
}

summary="$work/summary"
: > "$summary"
for entry in "${apps[@]}"; do
  IFS='|' read -r name program small large options <<< "$entry"
  if [ -n "${APPS:-}" ] && [[ " $APPS " != *" $name "* ]]; then continue; fi
  measure "$name" small "$program" "$small" "$options"
  measure "$name" large "$program" "$large" "$options"

  # live profile vs record, interleaved, best of 3 (wall) and peak RSS
  : > "$work/rec.times"
  : > "$work/prof.times"
  for i in 1 2 3; do
    # shellcheck disable=SC2086
    timed "$work/rec.times" "$memsnap" record -q -o "$work/t.mtr" -- "$program" $small
    # shellcheck disable=SC2086
    timed "$work/prof.times" "$memsnap" profile -q $options -o "$work/t.psnap" -- "$program" $small
  done
  rec_s=$(best_time "$work/rec.times"); prof_s=$(best_time "$work/prof.times")
  rec_kb=$(peak_rss "$work/rec.times"); prof_kb=$(peak_rss "$work/prof.times")

  "$memsnap" replay "$work/$name.small.psnap" -o "$work/same.mtr"
  replay_line=$("$build/bench/bench_replay" "$work/$name.small.psnap" "$work/same.mtr" | head -1)
  replay_rate=$(echo "$replay_line" | sed -n 's/.*replay *\([0-9.]*\) M\/s.*/\1/p')
  decode_rate=$(echo "$replay_line" | sed -n 's/.*decode *\([0-9.]*\) M\/s.*/\1/p')

  echo "== $name: $program (small: $small; large: $large${options:+; profile $options})"
  printf "  %-6s %10s %9s %7s %7s %7s %7s %9s %9s %9s %7s %7s\n" size accesses exact% \
    L1-mean L1-max L2-mean L2-max mtr-B psnap-B zst-B text/mtr zst/mtr
  for tag in small large; do
    base="$work/$name.$tag"
    accesses=$(sed -n 's/^accesses \([0-9]*\)$/\1/p' "$base.psnap" | head -1)
    exact=$(field "^exact match:" 3 "$base.verify" | tr -d '%')
    l1m=$(field "^  L1 mean" 3 "$base.verify"); l1x=$(field "^  L1 mean" 5 "$base.verify")
    l2m=$(field "^  L2 mean" 3 "$base.verify"); l2x=$(field "^  L2 mean" 5 "$base.verify")
    m=$(stat -c %s "$base.mtr"); p=$(stat -c %s "$base.psnap"); z=$(stat -c %s "$base.psnap.zst")
    printf "  %-6s %10s %9.4f %7s %7s %7s %7s %9s %9s %9s %7s %7s\n" "$tag" "$accesses" "$exact" \
      "$l1m" "$l1x" "$l2m" "$l2x" "$m" "$p" "$z" "$(ratio "$p" "$m")" "$(ratio "$z" "$m")"
    echo "$name $tag $accesses $exact $l1m $l1x $l2m $l2x $m $p $z" >> "$summary"
  done
  s="$work/$name.small"; l="$work/$name.large"
  acc_s=$(sed -n 's/^accesses \([0-9]*\)$/\1/p' "$s.psnap" | head -1)
  acc_l=$(sed -n 's/^accesses \([0-9]*\)$/\1/p' "$l.psnap" | head -1)
  growth=$(awk -v a="$(stat -c %s "$l.psnap.zst")" -v b="$(stat -c %s "$s.psnap.zst")" \
    'BEGIN { printf "%.1f", 100 * (a / b - 1) }')
  worst() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 > b + 0) ? a : b }'; }
  l1m=$(worst "$(field "^  L1 mean" 3 "$s.verify")" "$(field "^  L1 mean" 3 "$l.verify")")
  l1x=$(worst "$(field "^  L1 mean" 5 "$s.verify")" "$(field "^  L1 mean" 5 "$l.verify")")
  l2m=$(worst "$(field "^  L2 mean" 3 "$s.verify")" "$(field "^  L2 mean" 3 "$l.verify")")
  l2x=$(worst "$(field "^  L2 mean" 5 "$s.verify")" "$(field "^  L2 mean" 5 "$l.verify")")
  size=$(worst "$(ratio "$(stat -c %s "$s.psnap.zst")" "$(stat -c %s "$s.mtr")")" \
    "$(ratio "$(stat -c %s "$l.psnap.zst")" "$(stat -c %s "$l.mtr")")")
  time_ratio=$(ratio "$prof_s" "$rec_s"); rss_ratio=$(ratio "$prof_kb" "$rec_kb")
  replay_ratio=$(ratio "$replay_rate" "$decode_rate")
  echo "  bars (worse of the two sizes):"
  printf "    L1 mean %-6s <= 1.0   %s\n" "$l1m" "$(verdict "$l1m" 1.0)"
  printf "    L1 max  %-6s <= 3.5   %s\n" "$l1x" "$(verdict "$l1x" 3.5)"
  printf "    L2 mean %-6s <= 1.5   %s\n" "$l2m" "$(verdict "$l2m" 1.5)"
  printf "    L2 max  %-6s <= 5     %s\n" "$l2x" "$(verdict "$l2x" 5)"
  printf "    size zst/mtr %-6s <= 0.1   %s\n" "$size" "$(verdict "$size" 0.1)"
  printf "    growth large/small %s%% <= 10%% (%sx accesses)   %s\n" "$growth" \
    "$(awk -v a="$acc_l" -v b="$acc_s" 'BEGIN { printf "%.1f", a / b }')" "$(verdict "$growth" 10)"
  printf "    time profile/record %s (%s s / %s s) <= 1.2   %s\n" "$time_ratio" "$prof_s" "$rec_s" \
    "$(verdict "$time_ratio" 1.2)"
  printf "    peak RSS profile/record %s (%s / %s KiB) <= 4   %s\n" "$rss_ratio" "$prof_kb" "$rec_kb" \
    "$(verdict "$rss_ratio" 4)"
  printf "    replay/decode %s (%s / %s M/s) >= 1   %s\n" "$replay_ratio" "$replay_rate" \
    "$decode_rate" "$(verdict "$replay_ratio" 1 ge)"
  echo "$name bars $l1m $l1x $l2m $l2x $size $growth $time_ratio $rss_ratio $replay_ratio" >> "$summary"
  rm -f "$work/$name".*.mtr "$work/same.mtr" "$work/t.mtr" "$work/t.psnap"
done

echo
echo "== applications: one line per workload (worse of small and large; bars in brackets) =="
printf "%-11s %8s %8s %8s %8s %8s %8s %8s %7s %8s\n" workload "L1mean" "L1max" "L2mean" "L2max" \
  "zst/mtr" "growth%" "prof/rec" "RSSx" "replay/dec"
printf "%-11s %8s %8s %8s %8s %8s %8s %8s %7s %8s\n" "(bar)" "<=1.0" "<=3.5" "<=1.5" "<=5" \
  "<=0.1" "<=10" "<=1.2" "<=4" ">=1"
awk '$2 == "bars" { printf "%-11s %8s %8s %8s %8s %8s %8s %8s %7s %8s\n", $1, $3, $4, $5, $6, $7, $8, $9, $10, $11 }' "$summary"
