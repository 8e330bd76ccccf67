#!/usr/bin/env bash
# Draws the locality pictures of docs/locality.md from the test kernels:
#   scripts/make-plots.sh [BUILD_DIR]     (default build; needs gnuplot-nox)
# Records each kernel once, then draws into docs/plots/:
#   matmul-surface.png / .svg   cache surface heat map of the naive matmul (150 x 150)
#   matmul-surface-3d.png       the same surface in 3-D
#   matmul-reuse.png            its reuse-distance CDFs, one curve per line width
#   tiled-surface.png           the blocked matmul's surface, for comparison
#   locality-chart.png / .svg   spatial vs temporal scores of five kernels
#   compare.txt                 the similarity matrix of their surfaces
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
here=$(cd "$(dirname "$0")/.." && pwd)
out="$here/docs/plots"
work=$(mktemp -d /tmp/memsnap-plots-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

record() { # record NAME KERNEL ARGS...
  local name=$1 kernel=$2
  shift 2
  "$memsnap" record --quiet -o "$work/$name.mtr" -- "$kernels/$kernel" "$@" > /dev/null
}
record matmul matmul 150
record tiled matmul_blocked 144
record stream stream_add 400000
record gather random_gather 1048576 400000
record list linked_list 100000

"$memsnap" plot surface --title 'matmul 150x150 (naive ijk)' "$work/matmul.mtr" -o "$out/matmul-surface.png"
"$memsnap" plot surface --title 'matmul 150x150 (naive ijk)' "$work/matmul.mtr" -o "$out/matmul-surface.svg"
"$memsnap" plot surface --3d --title 'matmul 150x150 (naive ijk)' "$work/matmul.mtr" -o "$out/matmul-surface-3d.png"
"$memsnap" plot reuse --title 'matmul 150x150 (naive ijk)' "$work/matmul.mtr" -o "$out/matmul-reuse.png"
"$memsnap" plot surface --title 'matmul 144x144 (24x24 tiles)' "$work/tiled.mtr" -o "$out/tiled-surface.png"
(cd "$work" && "$memsnap" plot scores stream.mtr gather.mtr matmul.mtr tiled.mtr list.mtr -o "$out/locality-chart.png")
(cd "$work" && "$memsnap" plot scores stream.mtr gather.mtr matmul.mtr tiled.mtr list.mtr -o "$out/locality-chart.svg")
(cd "$work" && "$memsnap" compare stream.mtr gather.mtr matmul.mtr tiled.mtr list.mtr) > "$out/compare.txt"
ls -l "$out"
