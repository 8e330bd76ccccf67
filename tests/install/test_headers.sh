#!/usr/bin/env bash
# Every public header compiles alone, in C and in C++ (declarations inside extern "C"),
# defines MS_API (it includes memsnap/api.h, directly or not), and the umbrella
# memsnap/memsnap.h includes every one of them.
# usage: test_headers.sh SOURCE_DIR CC CXX
set -euo pipefail
source=$1 cc=$2 cxx=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/memsnap-headers.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
for path in "$source"/include/memsnap/*.h; do
  header=memsnap/$(basename "$path")
  printf '#include <%s>\n#ifndef MS_API\n#error "%s does not include memsnap/api.h"\n#endif\n' \
    "$header" "$header" > "$work/alone.c"
  cp "$work/alone.c" "$work/alone.cc"
  "$cc" -std=c11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$source/include" \
    "$work/alone.c" || { echo "FAIL: $header alone in C" >&2; failed=1; }
  "$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror -fsyntax-only -I"$source/include" \
    "$work/alone.cc" || { echo "FAIL: $header alone in C++" >&2; failed=1; }
  [ "$header" = memsnap/memsnap.h ] && continue
  grep -q '^extern "C" {' "$path" || { echo "FAIL: $header has no extern \"C\" block" >&2; failed=1; }
  grep -q "^#include \"$header\"" "$source/include/memsnap/memsnap.h" ||
    { echo "FAIL: memsnap/memsnap.h does not include $header" >&2; failed=1; }
done
exit $failed
