#!/usr/bin/env bash
# scripts/install-deps.sh and a package database held by another apt run (the lock that
# made `make demo` fail with "Could not get lock /var/lib/dpkg/lock-frontend"):
# 1. every package installed: apt is not run at all, and nothing waits for the lock;
# 2. apt run anyway (MEMSNAP_DEPS_FORCE=1; --no-upgrade of installed packages changes
#    nothing, needs no network): it says it waits, waits, and succeeds.
# usage: test_install_deps.sh SOURCE_DIR HOLD_LOCK
set -euo pipefail
source=$1 hold_lock=$2
lock=/var/lib/dpkg/lock-frontend
work=$(mktemp -d "${TMPDIR:-/tmp}/memsnap-deps.XXXXXX")
holder=""
trap '[ -z "$holder" ] || kill "$holder" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# apt-get as seen by install-deps.sh: noted, then the real one
mkdir "$work/bin"
printf '#!/bin/sh\necho "apt-get $*" >> "%s/apt.log"\nexec /usr/bin/apt-get "$@"\n' "$work" \
  > "$work/bin/apt-get"
chmod +x "$work/bin/apt-get"
hold() { # SECONDS: holds the lock in the background, returns once it is held
  "$hold_lock" "$lock" "$1" > "$work/held" &
  holder=$!
  for _ in $(seq 100); do grep -q held "$work/held" && return; sleep 0.1; done
  fail "could not take $lock"
}
deps() { PATH="$work/bin:$PATH" MEMSNAP_DEPS="coreutils make" "$source/scripts/install-deps.sh"; }

hold 60
start=$(date +%s)
deps > "$work/out1" 2>&1 || { cat "$work/out1"; fail "install-deps.sh with every package installed"; }
[ ! -e "$work/apt.log" ] || fail "apt ran with every package installed: $(cat "$work/apt.log")"
[ $(($(date +%s) - start)) -lt 30 ] || fail "install-deps.sh waited with nothing to install"
kill "$holder"
wait "$holder" 2>/dev/null || true

hold 5
start=$(date +%s)
MEMSNAP_DEPS_FORCE=1 deps > "$work/out2" 2>&1 || {
  cat "$work/out2"; fail "apt-get install against a held lock (did it not wait?)"; }
elapsed=$(($(date +%s) - start))
kill -0 "$holder" 2>/dev/null && fail "install-deps.sh ended while the lock was still held"
grep -q "apt-get install" "$work/apt.log" || fail "MEMSNAP_DEPS_FORCE=1 did not run apt-get install"
grep -q "waiting" "$work/out2" || { cat "$work/out2"; fail "install-deps.sh did not say it was waiting"; }
echo "apt-get install waited for the held lock and succeeded (${elapsed} s)"
