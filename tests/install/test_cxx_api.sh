#!/usr/bin/env bash
# Builds tests/install/cxx_api.cpp with the C++ compiler against the build tree's public
# headers and libmemsnap.so, and runs it.
# usage: test_cxx_api.sh SOURCE_DIR CXX LIBMEMSNAP_SO
set -euo pipefail
source=$1 cxx=$2 library=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/memsnap-cxx.XXXXXX")
trap 'rm -rf "$work"' EXIT
libdir=$(dirname "$library")
"$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror -I"$source/include" \
  -o "$work/cxx_api" "$source/tests/install/cxx_api.cpp" -L"$libdir" -lmemsnap \
  -Wl,-rpath,"$libdir"
"$work/cxx_api" "$work"
