#!/usr/bin/env bash
# clang-tidy and cppcheck over the project's C sources (not the Valgrind tool, which
# compiles against Valgrind's own headers and flags).
set -euo pipefail
build=${1:-build}
files=$(git ls-files 'lib/*.c' 'programs/*.c' | grep -v '^lib/capture/valgrind/')
status=0
clang-tidy -p "$build" --quiet $files 2>/dev/null || status=1
# --inline-suppr: a `// cppcheck-suppress ID` line, with its reason above it, is honoured
cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability --inline-suppr \
  --suppress=missingIncludeSystem -I include $files || status=1
exit $status
