#!/usr/bin/env bash
# Installs memsnap into a temporary prefix and uses it from a clean environment
# (env -i PATH=/usr/bin:/bin, no LD_LIBRARY_PATH): the installed memsnap records a program
# with the installed Valgrind tool and simulates the trace; a C and a C++ program built with
# nothing but `pkg-config --cflags --libs memsnap` read that trace through libmemsnap.so.
# usage: test_install.sh BUILD_DIR SOURCE_DIR CMAKE CC CXX LIBDIR
set -euo pipefail
build=$1 source=$2 cmake=$3 cc=$4 cxx=$5 libdir=$6
work=$(mktemp -d "${TMPDIR:-/tmp}/memsnap-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }
clean() { env -i PATH=/usr/bin:/bin HOME="$work" PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" "$@"; }

"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log" || {
  cat "$work/install.log"; fail "cmake --install"; }

# The installed memsnap runs the Valgrind tool installed beside it: the program's
# environment shows the VALGRIND_LIB memsnap chose.
clean "$prefix/bin/memsnap" record -o "$work/env.mtr" -- /usr/bin/env > "$work/env.out" \
  2> "$work/record.err" || { cat "$work/record.err"; fail "installed memsnap record"; }
tool_dir=$(sed -n 's/^VALGRIND_LIB=//p' "$work/env.out")
[ -n "$tool_dir" ] && [ "$(realpath "$tool_dir")" = "$(realpath "$prefix/libexec/memsnap/valgrind")" ] ||
  fail "the installed memsnap did not use its own Valgrind tool: VALGRIND_LIB=$tool_dir"
clean "$prefix/bin/memsnap" sim --hierarchy nehalem --top 0 "$work/env.mtr" > "$work/sim.out" ||
  fail "installed memsnap sim"
grep -q '^  L1 ' "$work/sim.out" || { cat "$work/sim.out"; fail "no L1 line in the sim report"; }
accesses=$(clean "$prefix/bin/memsnap" info "$work/env.mtr" | awk '$1 == "accesses:" { print $2 }')
[ -n "$accesses" ] || fail "memsnap info gave no access count"

flags=$(clean pkg-config --cflags --libs memsnap) || fail "pkg-config --cflags --libs memsnap"
case "$flags" in *"-I$prefix/include"*) ;; *) fail "pkg-config gives '$flags', not -I$prefix/include" ;; esac

# The umbrella header declares the trace reader; C++ reads every header through extern "C".
cat > "$work/count.c" <<'PROGRAM'
#include <memsnap/memsnap.h>
#include <stdio.h>
int main(int argc, char **argv) {
  ms_source *source;
  if (argc != 2 || ms_trace_open(argv[1], &source) != MS_OK) return 1;
  ms_batch batch;
  if (ms_batch_init(&batch, 0) != MS_OK) return 1;
  unsigned long long count = 0;
  int rc;
  while ((rc = ms_source_next(source, &batch)) > 0) count += batch.count;
  ms_batch_free(&batch);
  ms_source_destroy(source);
  if (rc < 0) return 1;
  printf("%llu\n", count);
  return 0;
}
PROGRAM
cp "$work/count.c" "$work/count.cc"
cd "$work"
clean "$cc" -Wall -Werror count.c -o count_c $flags || fail "C program against the installed memsnap"
clean "$cxx" -std=c++11 -Wall -Werror count.cc -o count_cxx $flags ||
  fail "C++ program against the installed memsnap"
for program in count_c count_cxx; do
  # ldd's whole output first: grep -q stops reading at the first match, and under
  # pipefail ldd's SIGPIPE then failed the pipeline (C++'s longer list, CI run 23).
  libs=$(clean ldd "./$program")
  grep -q "=> $prefix/$libdir/libmemsnap.so" <<< "$libs" ||
    fail "$program does not load $prefix/$libdir/libmemsnap.so: $(grep memsnap <<< "$libs")"
  got=$(clean "./$program" "$work/env.mtr") || fail "$program did not run"
  [ "$got" = "$accesses" ] || fail "$program counted $got accesses, memsnap info $accesses"
done
echo "installed memsnap: record, sim, and C and C++ programs through pkg-config: $accesses accesses"
