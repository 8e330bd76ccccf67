#!/bin/sh
# The outputs of every command on one deterministic workload (workload.awk), compared
# byte for byte with the expected ones in expected/: a refactoring must not change what
# memsnap prints or writes. After a deliberate change of an output, regenerate them with
#   MEMSNAP_UPDATE_EXPECTED=1 tests/cli/outputs/test_outputs.sh build/bin/memsnap
# and review the diff.
# With ANALYZE (examples/analyze.c built), it also checks that the example program, which
# uses the library alone, prints the same reports as the commands.
# Usage: test_outputs.sh MEMSNAP [ANALYZE]
set -eu
memsnap=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
analyze=
[ $# -ge 2 ] && analyze=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
here=$(cd "$(dirname "$0")" && pwd)
expected=$here/expected
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir out

# run NAME CMD...: the command's standard output, then its standard error and exit status.
run() {
  name=$1
  shift
  status=0
  "$@" >out/"$name".stdout 2>out/"$name".stderr || status=$?
  {
    cat out/"$name".stdout
    echo "--- stderr"
    cat out/"$name".stderr
    echo "--- exit $status"
  } >out/"$name".out
  rm out/"$name".stdout out/"$name".stderr
}
# file NAME FILE: a written file as it is (text up to 32 KB) or as a checksum.
file() {
  if [ "$(wc -c <"$2")" -gt 32768 ] || LC_ALL=C grep -q '[^[:print:][:space:]]' "$2"; then
    cksum <"$2" >out/"$1".out
  else
    cp "$2" out/"$1".out
  fi
}

awk -f "$here/workload.awk" >w.lackey
m=$memsnap
run convert $m convert w.lackey w.mtr
file w.mtr w.mtr
run info $m info w.mtr
run info-json $m info --json w.mtr
run info-check $m info --check w.mtr
run info-lackey $m info w.lackey
run dump $m dump w.mtr --from 5000 --limit 40
run dump-din $m dump --format din w.mtr --limit 20
run convert-din $m convert w.mtr w.din
file w.din w.din
run hierarchies $m hierarchies
run sim $m sim -H nehalem -H 32k/64/8,256k/64/8 w.mtr
run sim-json $m sim -H nehalem --json w.mtr
run sim-evaluation $m sim -H evaluation w.mtr
run profile $m profile -o p.psnap w.mtr
file p.psnap p.psnap
run profile-lossy $m profile --site-cap 64 -o lossy.psnap w.mtr
file lossy.psnap lossy.psnap
run profile-lossless $m profile --lossless -o lossless.psnap w.mtr
file lossless.psnap lossless.psnap
run show $m show p.psnap
run show-all $m show lossy.psnap --all
run replay $m replay p.psnap --limit 30
run replay-mtr $m replay lossy.psnap -o r.mtr
run replay-dump $m dump r.mtr --from 3000 --limit 30
run verify $m verify p.psnap w.mtr
run verify-lossy $m verify lossy.psnap w.mtr
run verify-json $m verify --json --sites 3 lossy.psnap w.mtr
run surface $m surface -w 8:128 -d 1:4096 w.mtr
run surface-json $m surface -w 64 -d 1:1024 --format json w.mtr
run scores $m scores w.mtr
run signature $m signature -o s.sig w.mtr
file s.sig s.sig
run show-sig $m show s.sig
run show-sig-json $m show s.sig --json
run synth $m synth s.sig -o seed.mtr
run seed-info $m info seed.mtr
run seed-sim $m sim -H nehalem seed.mtr
run compare $m compare w.mtr r.mtr
run compare-json $m compare --json w.mtr p.psnap
run compare-matrix $m compare w.mtr r.mtr p.psnap s.sig
run sim-top $m sim -H 32k/64/8 --top 3 --policy fifo w.mtr
run sim-all-json $m sim -H 16k/32/4,128k/64/8 --model cachegrind --json --top 2 w.mtr
run scores-json $m scores --json --top 3 w.mtr
run scores-sample $m scores --sample 1k/2k --word 4 --top all w.mtr
run surface-csv $m surface -w 32,64 -d 1:64 --format csv w.mtr
run surface-shards $m surface -w 64 -d 1:4096 --shards 0.5 --shards-check -o shards.txt w.mtr
file shards.txt shards.txt
run surface-sig $m surface s.sig
run signature-site $m signature --per-site --site-cap 500 --json w.mtr
run signature-sample $m signature --sample 2k/3k --width 256 --word 8 w.mtr
run signature-cold $m signature --sample 2k/3k --sample-cold --warmup 100 w.mtr
run signature-widths $m signature --widths w.mtr
run profile-high $m profile --fidelity high -o high.psnap w.mtr
file high.psnap high.psnap
run profile-low $m profile --fidelity low --order-cap 100 -o low.psnap w.mtr
file low.psnap low.psnap
run profile-stdout $m profile --lossless --order-periods 4 w.mtr
run info-psnap $m info --json p.psnap
run show-site $m show p.psnap --site 4
run show-json $m show lossy.psnap --json
run show-json-site $m show p.psnap --json --site 1
run synth-json $m synth --hand random --width 256 --word 8 --json -o hand.mtr
run recover $m recover w.mtr -o rec.mtr
run recover-dump $m dump rec.mtr --limit 10
run bad-option $m sim --bogus w.mtr
run bad-file $m info w.lackey.missing

# the example program: two analyses in one pass, the reports of the two commands
if [ -n "$analyze" ]; then
  for input in w.mtr p.psnap; do
    "$analyze" $input 'sim hierarchy=nehalem hierarchy=16k/32/4 top=3' \
      'surface widths=32,64 depths=1:2048' >analyze.out
    { $m sim -H nehalem -H 16k/32/4 --top 3 $input && echo &&
      $m surface -w 32,64 -d 1:2048 $input; } >commands.out
    if ! cmp -s analyze.out commands.out; then
      diff -u commands.out analyze.out || true
      echo "test_outputs: examples/analyze on $input differs from memsnap sim and surface" >&2
      exit 1
    fi
  done
fi

# verify names the hierarchy of each level's largest difference: its two hit rates differ by
# the level's max_points
python3 - out/verify-json.out << 'EOF' || exit 1
import json, sys
text = open(sys.argv[1]).read().split("\n--- stderr\n")[0]
levels = json.loads(text)["hit_rate_differences"]
for level in levels:
    gap = abs(level["max_trace_percent"] - level["max_replay_percent"])
    if abs(gap - level["max_points"]) > 1e-9:
        sys.exit("test_outputs: L%d: largest on %s differs by %g, max_points %g" % (
            level["level"], level["max_hierarchy"], gap, level["max_points"]))
EOF

if [ "${MEMSNAP_UPDATE_EXPECTED:-}" = 1 ]; then
  rm -rf "$expected"
  cp -r out "$expected"
  echo "test_outputs: expected outputs written to $expected"
  exit 0
fi
if diff -r -u "$expected" out >diff.txt; then
  echo "test_outputs: $(ls out | wc -l) outputs as expected"
else
  cat diff.txt
  echo "test_outputs: outputs differ from $expected (above)" >&2
  exit 1
fi
