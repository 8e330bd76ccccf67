#!/usr/bin/env bash
# The main job on a bundled example: observe a matrix-multiply kernel, look at its trace,
# simulate it on a Nehalem-like hierarchy, and simulate it live without storing a trace.
set -euo pipefail
build=${1:-build}
memsnap="$build/bin/memsnap"
kernel="$build/tests/programs/matmul"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { echo; echo "\$ $*"; "$@"; }
run "$memsnap" record -o "$out/matmul.mtr" -- "$kernel"
run "$memsnap" info "$out/matmul.mtr"
run "$memsnap" dump "$out/matmul.mtr" --limit 10
run "$memsnap" sim --hierarchy nehalem "$out/matmul.mtr"
run "$memsnap" sim --hierarchy hpcmo-07 --top 3 -- "$kernel"
# PSnAP: a profile of the kernel (live, no trace stored), read by a person, replayed.
run "$memsnap" profile -f matmul -o "$out/matmul.psnap" -- "$kernel"
run "$memsnap" show "$out/matmul.psnap"
run "$memsnap" verify --no-cache "$out/matmul.psnap" "$out/matmul.mtr"
run "$memsnap" sim --hierarchy nehalem "$out/matmul.psnap"
