#!/usr/bin/env bash
# scripts/demo.sh (make demo) leaves its files in its folder, keeps the program's own
# output out of what it shows (in program.out), repeats no line, says what each step
# shows, and ends with how to run memsnap on one's own program and put it on PATH.
# usage: test_demo.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source=$1 build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/memsnap-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$source/scripts/demo.sh" "$build" "$work/out" > "$work/demo.txt" 2>&1 ||
  { cat "$work/demo.txt"; fail "demo.sh failed"; }
for f in matmul.mtr matmul.psnap sim.txt sim-live.txt verify.txt program.out; do
  [ -s "$work/out/$f" ] || fail "demo.sh left no $f"
done
"$build/tests/kernels/matmul" > "$work/own.out"
cmp -s "$work/own.out" "$work/out/program.out" || fail "program.out is not matmul's own output"
! grep -qxF -f "$work/own.out" "$work/demo.txt" || fail "matmul's own output is in what the demo shows"
repeated=$(uniq -d "$work/demo.txt")
[ -z "$repeated" ] || fail "lines repeated: $repeated"
commands=$(grep -c '^\$ ' "$work/demo.txt")
captions=$(grep -c '^== ' "$work/demo.txt")
[ "$captions" -eq $((commands + 1)) ] || fail "$commands commands but $captions captions (one before each, one at the end)"
grep -q 'memsnap record -o app.mtr -- ./app' "$work/demo.txt" || fail "no command for one's own program"
grep -q "export PATH=\"$(cd "$build/bin" && pwd):" "$work/demo.txt" || fail "no line putting memsnap on PATH"
echo "demo: $commands steps, files in its folder"
