#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build briefly, from the seed corpus in fuzz/corpus/NAME.
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-20}
here=$(cd "$(dirname "$0")/.." && pwd)
status=0
for fuzzer in "$build"/fuzz/fuzz_*; do
  [ -x "$fuzzer" ] || continue
  name=$(basename "$fuzzer")
  work=$(mktemp -d)
  [ -d "$here/fuzz/corpus/$name" ] && cp -r "$here/fuzz/corpus/$name/." "$work/"
  echo "fuzz: $name for ${seconds}s"
  if ! "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
       -artifact_prefix="$build/fuzz/$name-" "$work" 2>"$build/fuzz/$name.log"; then
    echo "fuzz: $name FAILED (see $build/fuzz/$name.log)"; tail -30 "$build/fuzz/$name.log"; status=1
  else
    grep -E '^#[0-9]+.*DONE' "$build/fuzz/$name.log" | tail -1 || true
  fi
  rm -rf "$work"
done
exit $status
