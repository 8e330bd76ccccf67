#!/usr/bin/env bash
# Synthetic traces and the pointer-chasing benchmark (lib/synth, lib/chase), measured in
# this one run:
#   1. seed generation from a 17-depth signature (gather 200000): seconds per block-phase
#      iteration (target <= 10 s) and seed size (target: a few MB, <= 4 MB), without and
#      with the narrower widths' rows (signature --widths)
#   2. memsnap bench on a hand-written random unique seed, footprint 256 MiB (8x this
#      machine's 32 MiB LLC): memory operations per second for ILP 1, 2, 4, 8, 16 and the
#      ratio ILP 4 / ILP 1 (target >= 2x)
#   3. the benchmark's own stream (issue 6): memsnap bench on a unique seed of the gather
#      signature (footprint: the seed's minimum, 40 MB; 20M operations) recorded with
#      memsnap record at ILP 1 and 4 (bench/bench_chase.c, tests/synth/chase_record.h):
#      chase loads / run-phase accesses (target >= 99%), the chase rebased = the expanded
#      seed, ILP 4 = ILP 1 (multiset and order), and memsnap compare of the chase against
#      the seed expanded to the same footprint and length: max |hit rate difference| per
#      level on the 46 hierarchies (target <= 0.005) and on the surfaces
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
memsnap="$build/bin/memsnap"
work=$(mktemp -d /tmp/memsnap-bench-synth-XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== synth: seed generation =="
"$memsnap" record -o "$work/gather.mtr" -- "$build/tests/kernels/gather" 200000 >/dev/null 2>&1
"$memsnap" signature "$work/gather.mtr" -o "$work/gather.sig"
# seconds per block-phase iteration and seed size of `synth SIG --max-error 0 --iterations 3`
# (every iteration runs to the million-reference cap); LABEL prefixes the lines
generation() {
  local sig=$1 seed=$2 label=$3 t0 t1 iterations bytes
  t0=$(date +%s.%N)
  "$memsnap" synth "$sig" --max-error 0 --iterations 3 -o "$seed" >"$work/synth.out"
  t1=$(date +%s.%N)
  iterations=$(sed -n 's/^iterations \([0-9]*\),.*/\1/p' "$work/synth.out")
  bytes=$(stat -c %s "$seed")
  awk -v a="$t0" -v b="$t1" -v n="$iterations" -v s="$bytes" -v l="$label" 'BEGIN {
    printf "seed generation%s: %.2f s for %d iterations of 1M references: %.2f s per iteration (target <= 10 s)\n", l, b - a, n, (b - a) / n
    printf "seed size%s: %.2f MB (target <= 4 MB)\n", l, s / 1e6 }'
}
generation "$work/gather.sig" "$work/gather.seed" ""
# the same with the width rows (signature --widths): the words aimed at them, the block
# phase choosing among 8 blocks per reference (lib/synth/synth_words.c)
"$memsnap" signature --widths "$work/gather.mtr" -o "$work/gather.w.sig"
generation "$work/gather.w.sig" "$work/gather.w.seed" " with width rows"
sed -n 's/^narrower widths: /seed with width rows, narrower widths: /p' "$work/synth.out"

echo "== bench: random pattern, footprint 256 MiB =="
"$memsnap" synth --hand random --unique -o "$work/random.useed" >/dev/null
printf "%-5s %16s %10s\n" ILP "memops/s" "vs ILP 1"
base=0
for k in 1 2 4 8 16; do
  rate=$("$memsnap" bench "$work/random.useed" --footprint 256Mi --ops 20M --ilp "$k" --json |
    sed -n 's/.*"memops_per_second": *\([0-9.e+]*\).*/\1/p')
  [ "$k" = 1 ] && base=$rate
  [ "$k" = 4 ] && four=$rate
  awk -v k="$k" -v r="$rate" -v b="$base" 'BEGIN { printf "%-5s %16.4g %9.2fx\n", k, r, r / b }'
done
awk -v a="$four" -v b="$base" 'BEGIN { printf "ratio ILP4/ILP1 %.2fx (target >= 2x)\n", a / b }'

echo "== bench stream recorded vs its seed: gather unique seed, 20M operations =="
"$memsnap" synth "$work/gather.sig" --unique -o "$work/gather.useed" >/dev/null
ops=20000000
for k in 1 4; do
  "$memsnap" record --quiet -o "$work/bench$k.mtr" -- \
    "$memsnap" bench "$work/gather.useed" --ops "$ops" --ilp "$k" >"$work/bench$k.out"
done
footprint=$(sed -n 's/^footprint \([0-9]*\) bytes.*/\1/p' "$work/bench1.out")
echo "footprint $footprint bytes, $ops operations"
"$build/bench/bench_chase" "$work/bench1.mtr" "$work/bench4.mtr" "$work/gather.useed" \
  "$footprint" "$ops" "$work/chase.mtr" | sed 's/^ILP K/ILP 4/'
rm -f "$work/bench1.mtr" "$work/bench4.mtr"
"$memsnap" compare --footprint "$footprint" --length "$ops" "$work/chase.mtr" \
  "$work/gather.useed" >"$work/compare.out"
awk '/^  L[0-9] mean/ { printf "recorded chase vs seed, %s: max |hit rate difference| %s over %s hierarchies, mean %s (target max <= 0.005)\n", $1, $5, substr($6, 2), $3 }
     /^surfaces:/ { print "recorded chase vs seed, " $0 " (target max <= 0.005)" }' "$work/compare.out"
