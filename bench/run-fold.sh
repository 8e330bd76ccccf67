#!/usr/bin/env bash
# Fold (nested-repetition compression; bench/run.sh runs this with the build folder as $1).
# Figures, each a ratio of two things measured in this one run (bench_fold):
#   1. push: ms_fold_push per element vs a loop reading the same array
#      (target <= 10x on regular sequences, <= 500x on irregular ones)
#   2. replay: the fold's expression read by ms_expr_cursor_read vs copying the expanded
#      array in the same chunks
#      (target <= 1x on regular sequences, <= 8x on irregular ones: a 24-byte term
#      per element is 3x the bytes of the copied array)
set -euo pipefail
build=${1:-build}
build=$(cd "$build" && pwd)
echo "== fold: push and replay of 8 M elements =="
"$build/bench/bench_fold" 8
