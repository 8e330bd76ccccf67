#!/usr/bin/env bash
# Merging threads and MPI ranks into near-constant-size profiles (issue 19): how the profile
# of a weak-scaling program grows with its threads or ranks, each thread's or rank's work
# the same whatever their number (tests/kernels/omp_vadd.c, omp_matmul.c, mpi_stencil.c).
#   psnap:  today's profile, one block of sites and one order per thread (the ranks: one
#           file per rank, their sizes added);
#   merged: `memsnap merge -o merged.psnap IN.psnap...` on the same profiles (the threads of
#           one profile, the ranks' files); "n/a" while memsnap has no merge command;
#   mtr:    the raw traces of the same runs (the ranks' files added), for comparison.
# Each size is recorded once (memsnap record) and profiled from its trace: the default
# profile, the executable's accesses (libgomp's and libmpi's left out).
# OMP_WAIT_POLICY=passive: libgomp's spinning at barriers made the trace of omp_vadd at 16
# threads 2.23 to 2.25 M accesses from run to run (1.93 M, every run, when passive).
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
memsnap="$build/bin/memsnap"
kernels="$build/tests/kernels"
work=$(mktemp -d /tmp/memsnap-bench-merge-XXXXXX)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/common.sh"
export OMP_WAIT_POLICY=passive
# Open MPI refuses to run as root (CI containers) unless told
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpiexec=${MPIEXEC:-mpirun}

bytes() { cat "$@" | wc -c; }

# merged OUT IN...: the merged profile's size, "n/a" without a merge command, "failed" when
# the command exists and fails (its messages in OUT.log)
merged() {
  local out=$1
  shift
  if "$memsnap" merge -o "$out" "$@" > "$out.log" 2>&1 && [ -f "$out" ]; then
    bytes "$out"
  elif grep -q "unknown command 'merge'" "$out.log"; then
    echo n/a
  else
    echo failed
  fi
}

# threads NAME UNITS ARGS...: records and profiles one OpenMP run; sets psnap, mtr, merge
threads() {
  local name=$1 units=$2
  shift 2
  "$memsnap" record -q -o "$work/$name.mtr" -- "$kernels/$name" "$units" "$@" > /dev/null
  "$memsnap" profile -q --keep-threads -o "$work/$name.psnap" "$work/$name.mtr"
  psnap=$(bytes "$work/$name.psnap")
  mtr=$(bytes "$work/$name.mtr")
  merge=$(merged "$work/$name.merged.psnap" "$work/$name.psnap")
  rm -f "$work/$name".*
}

# ranks NAME UNITS: records one run of UNITS ranks (one trace per rank) and profiles each
# rank's trace; sets psnap, mtr, merge
ranks() {
  local name=$1 units=$2 dir="$work/$1.$2"
  mkdir "$dir"
  # stderr kept aside: hwloc says at every rank that its x86 backend cannot work under Valgrind
  if ! "$mpiexec" --oversubscribe -n "$units" "$memsnap" record -q -o "$dir/app.%r.mtr" -- \
    "$kernels/$name" > /dev/null 2> "$dir/stderr"; then
    cat "$dir/stderr" >&2
    return 1
  fi
  for ((r = 0; r < units; r++)); do
    "$memsnap" profile -q --rank "$r" -o "$dir/app.$r.psnap" "$dir/app.$r.mtr"
  done
  psnap=$(bytes "$dir"/app.*.psnap)
  mtr=$(bytes "$dir"/app.*.mtr)
  merge=$(merged "$dir/merged.psnap" "$dir"/app.*.psnap)
  last_ranks=$dir # kept for the verification and the merge costs below
}

growth() { case "$1$2" in *[!0-9]*) echo n/a ;; *) echo "$(ratio "$2" "$1")x" ;; esac; }

echo "== merging threads and ranks: profile bytes as a weak-scaling program grows =="
echo "   (psnap: one block per thread or rank today; merged: memsnap merge; mtr: raw traces)"
printf "%-28s %6s %8s %8s %7s %8s %8s %7s %9s %9s %7s\n" program units psnap-a psnap-b ratio \
  merged-a merged-b ratio mtr-a mtr-b ratio
# label|kind|program|small|large|arguments after the unit count
while IFS='|' read -r label kind name small large args; do
  "$kind" "$name" "$small" $args
  psnap_a=$psnap mtr_a=$mtr merge_a=$merge
  "$kind" "$name" "$large" $args
  printf "%-28s %6s %8s %8s %7s %8s %8s %7s %9s %9s %7s\n" "$label" "$small/$large" \
    "$psnap_a" "$psnap" "$(growth "$psnap_a" "$psnap")" "$merge_a" "$merge" \
    "$(growth "$merge_a" "$merge")" "$mtr_a" "$mtr" "$(growth "$mtr_a" "$mtr")"
done << EOF
omp_vadd (threads)|threads|omp_vadd|2|16|
omp_matmul 2 rows (threads)|threads|omp_matmul|4|64|2
mpi_stencil (ranks)|ranks|mpi_stencil|2|16|
EOF
echo "(ratio: the larger run over the smaller; a merged profile near constant in size: near 1.00x)"
echo "(bars, merged ratio: omp_vadd <= 1.10x, omp_matmul <= 2.00x, mpi_stencil <= 1.20x)"

# The largest stencil run's merged profile against each rank's own trace (bar: every rank
# 100% exact), then the merge's cost: 64 and 256 rank profiles made from its 16 (each
# file's `rank` line rewritten: rank r > 0 is rank 1 + (r - 1) mod 15's profile), merged in one process
# against reading them (bench_merge: bar <= 2), and by `mpirun -n 2 memsnap merge` against
# one process (bar: faster).
dir=$last_ranks
worst=100
for ((r = 0; r < 16; r++)); do
  exact=$("$memsnap" verify --no-cache --rank "$r" "$dir/merged.psnap" "$dir/app.$r.mtr" |
    sed -n 's/^exact match: \([0-9.]*\)%.*/\1/p' || true)
  worst=$(awk -v a="$worst" -v b="${exact:-0}" 'BEGIN { print (b < a) ? b : a }')
done
echo "mpi_stencil 16 ranks: lowest exact match of a rank's replay against its trace: $worst% (bar: 100%)"
for n in 64 256 2048; do
  mkdir -p "$dir/$n"
  for ((r = 0; r < n; r++)); do
    # rank 0 stays the only one of its kind (it prints); the others repeat ranks 1 to 15
    sed "s/^rank [0-9]*$/rank $r/" "$dir/app.$((r == 0 ? 0 : 1 + (r - 1) % 15)).psnap" \
      > "$dir/$n/app.$r.psnap"
  done
done
"$build/bench/bench_merge" "$dir"/64/app.*.psnap | sed 's/^/merge of 64 stencil rank profiles: /'
echo "  (bar: merge/read <= 2)"
one=$( { /usr/bin/time -f %e "$memsnap" merge -q -o "$dir/one.psnap" "$dir"/256/app.*.psnap; } 2>&1 | tail -1)
two=$( { /usr/bin/time -f %e "$mpiexec" --oversubscribe -n 2 "$memsnap" merge -q -o "$dir/two.psnap" \
  "$dir"/256/app.*.psnap; } 2>&1 | tail -1)
same=$(cmp -s "$dir/one.psnap" "$dir/two.psnap" && echo "the same bytes" || echo "DIFFERENT bytes")
echo "merge of 256 stencil rank profiles: one process ${one} s, mpirun -n 2 ${two} s, ratio $(ratio "$two" "$one")x, $same (bar: < 1, same bytes)"
# The 256 profiles' bar (< 1) is out of reach at their size: one process merges them in
# 0.11 s, and an MPI job of two processes that merges just 2 files takes 0.33 s here (0.12 to
# 0.15 s with OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader, without the probes of the network
# transports; 2026-11-29). And where two processes win: MPI_Init alone takes ~0.4 s here. The 2048 files are named by
# their pattern: their names one by one (136 KB) overflowed the command line that Open MPI
# hands on ("Argument list too long"), which ended this script before 2026-11-29.
one=$( { /usr/bin/time -f %e "$memsnap" merge -q -o "$dir/one.psnap" "$dir/2048/app.%r.psnap"; } 2>&1 | tail -1)
two=$( { /usr/bin/time -f %e "$mpiexec" --oversubscribe -n 2 "$memsnap" merge -q -o "$dir/two.psnap" \
  "$dir/2048/app.%r.psnap"; } 2>&1 | tail -1)
same=$(cmp -s "$dir/one.psnap" "$dir/two.psnap" && echo "the same bytes" || echo "DIFFERENT bytes")
echo "merge of 2048 stencil rank profiles: one process ${one} s, mpirun -n 2 ${two} s, ratio $(ratio "$two" "$one")x, $same"
rm -rf "$dir"
