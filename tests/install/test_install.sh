#!/usr/bin/env bash
# Installs memsnap into a temporary prefix and uses it from a clean environment
# (env -i PATH=/usr/bin:/bin, no LD_LIBRARY_PATH): the installed memsnap records a program
# with the installed Valgrind tool and simulates the trace; a C and a C++ program built with
# nothing but `pkg-config --cflags --libs memsnap` read that trace through libmemsnap.so;
# the installed Python module reads it too and observes a program.
# usage: test_install.sh BUILD_DIR SOURCE_DIR CMAKE CC CXX LIBDIR PYTHON3
set -euo pipefail
build=$1 source=$2 cmake=$3 cc=$4 cxx=$5 libdir=$6 python3=$7
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
# The Python module lies where python3 looks for the packages of the prefix: for the
# prefix /usr/local, in a folder of python3's own path. The temporary prefix is on no path,
# so the script adds its folder; the library and the Valgrind tool it finds by itself.
package_dir=$(cd "$prefix" && find . -path '*/memsnap/_config.py' | sed 's|^\./||; s|/memsnap/_config.py$||')
[ -n "$package_dir" ] || fail "no memsnap Python package under $prefix"
clean "$python3" -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "/usr/local/$package_dir" ||
  fail "the Python package went to $prefix/$package_dir: /usr/local/$package_dir is not on python3's path"
clean "$python3" - "$prefix/$package_dir" "$work/env.mtr" "$accesses" "$prefix/$libdir" \
  > "$work/python.out" 2> "$work/python.err" <<'SCRIPT' || { cat "$work/python.err"; fail "the installed Python module"; }
import os, sys
sys.path.insert(0, sys.argv[1])
import memsnap
library = memsnap._capi.lib._name
assert os.path.dirname(library) == sys.argv[4], "loaded " + library
with memsnap.open(sys.argv[2]) as trace:
    counted = sum(len(batch) for batch in trace)
assert counted == int(sys.argv[3]), "counted %d accesses" % counted
with memsnap.open(argv=["/usr/bin/env"]) as live:
    observed = sum(len(batch) for batch in live)
    assert observed > 0 and live.info["exit_status"] == 0, live.info
SCRIPT
tool_dir=$(sed -n 's/^VALGRIND_LIB=//p' "$work/python.out")
[ -n "$tool_dir" ] && [ "$(realpath "$tool_dir")" = "$(realpath "$prefix/libexec/memsnap/valgrind")" ] ||
  fail "the installed Python module did not use the installed Valgrind tool: VALGRIND_LIB=$tool_dir"

echo "installed memsnap: record, sim, C and C++ programs through pkg-config, Python: $accesses accesses"
