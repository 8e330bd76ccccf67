#!/usr/bin/env bash
# memsnap in two minutes, on a bundled kernel (tests/kernels/matmul.c, a naive 150x150
# matrix multiply): record its memory accesses, look at them, simulate caches on the trace
# and live, build a readable profile and check that it replays the trace exactly.
# usage: scripts/demo.sh [BUILD_DIR [OUTPUT_DIR]]; the files stay in OUTPUT_DIR (demo-out).
set -euo pipefail
build=${1:-build}
out=${2:-demo-out}
memsnap="$build/bin/memsnap"
kernel="$build/tests/kernels/matmul"
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }
run() { echo "\$ $*"; "$@"; }
# run_to FILE COMMAND...: the command's standard output (the program's own) goes to FILE
run_to() { local file=$1; shift; echo "\$ $* > $file"; "$@" > "$file"; }

step "record: matmul runs under Valgrind and each of its loads and stores goes to $out/matmul.mtr (matmul's own output, one number, goes to $out/program.out)"
run_to "$out/program.out" "$memsnap" record -o "$out/matmul.mtr" -- "$kernel"

step "info: what the trace holds; a site is one instruction that accesses memory"
run "$memsnap" info "$out/matmul.mtr"

step "dump: the first accesses, one a line: index, thread, kind, address, size in bytes, site (the loader runs first)"
run "$memsnap" dump "$out/matmul.mtr" --limit 5

step "sim: hit rates of a Nehalem-like L1/L2/L3 on the trace, and the source line that misses most at each level; L1 counts a few more accesses than info, as an access spanning two cache lines counts once per line (--model cachegrind counts it once)"
run "$memsnap" sim --hierarchy nehalem --top 1 -o "$out/sim.txt" "$out/matmul.mtr"
cat "$out/sim.txt"

step "sim live: the same simulation while matmul runs, with no trace stored: the same run, so the same numbers (report in $out/sim-live.txt, matmul's output in $out/program.out)"
run_to "$out/program.out" "$memsnap" sim --hierarchy nehalem --top 1 -o "$out/sim-live.txt" -- "$kernel"
cat "$out/sim-live.txt"

step "profile: a PSnAP profile of matmul's executable (the loader and libc left out), each site as a stride pattern, in $out/matmul.psnap"
run "$memsnap" profile -o "$out/matmul.psnap" "$out/matmul.mtr"

step "show: the two loads of matmul.c:10, the line that misses most in L1: a[i*n+k] walks a row (+8 bytes), b[k*n+j] a column (+1200 bytes, a row apart)"
run "$memsnap" show --line matmul.c:10 "$out/matmul.psnap"

step "verify: the profile replayed against the same accesses of the trace (matmul's executable): exact match, and hit rates on the 46 evaluation hierarchies"
run "$memsnap" verify --sites 1 -o "$out/verify.txt" "$out/matmul.psnap" "$out/matmul.mtr"
cat "$out/verify.txt"

bin=$(cd "$build/bin" && pwd)
cat <<EOF

== done: the trace, profile and reports are in $out/
Your own program (build it with -g for source lines):
  memsnap record -o app.mtr -- ./app ARGS
  memsnap sim --hierarchy nehalem app.mtr
  memsnap profile -o app.psnap app.mtr && memsnap show app.psnap
memsnap on PATH: export PATH="$bin:\$PATH"
  or install it: make install PREFIX=~/.local (then ~/.local/bin on PATH)
EOF
