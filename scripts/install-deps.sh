#!/usr/bin/env bash
# Installs the Debian 12 packages memsnap needs, only those that are missing: when every
# one is installed, apt is not run at all. When another apt or dpkg run (a second terminal,
# unattended-upgrades) holds the package database, says so and waits, up to 10 minutes.
#   MEMSNAP_DEPS="p1 p2"  check these packages instead of memsnap's list
#   MEMSNAP_DEPS_FORCE=1  run apt-get install even if they are all installed (with
#                         --no-upgrade it changes nothing; tests/install uses it to test the wait)
set -euo pipefail
packages=(build-essential cmake pkg-config clang libclang-rt-14-dev valgrind zstd
          libzstd-dev libdw-dev libelf-dev libjson-c-dev libcmocka-dev gfortran
          libomp-14-dev util-linux gnuplot-nox openmpi-bin libopenmpi-dev groff-base
          python3 python3-numpy chromium llvm-14-dev
)
[ -n "${MEMSNAP_DEPS:-}" ] && read -ra packages <<< "$MEMSNAP_DEPS"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
install=("${missing[@]}")
[ "${MEMSNAP_DEPS_FORCE:-}" = 1 ] && install=("${packages[@]}")
[ ${#install[@]} -eq 0 ] && exit 0
echo "memsnap: installing missing Debian packages: ${install[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "memsnap: need root (or sudo) to install: ${install[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
lock_timeout=600
if lslocks --noheadings --raw --output PATH 2>/dev/null |
    grep -qx -e /var/lib/dpkg/lock-frontend -e /var/lib/dpkg/lock -e /var/lib/apt/lists/lock; then
  echo "memsnap: another apt or dpkg run holds the package database: waiting for it (up to $((lock_timeout / 60)) minutes)"
fi
# apt-get update does not wait for the lists lock (DPkg::Lock::Timeout is for the dpkg
# lock only, apt 2.6): it is retried while another run holds it.
update_lists() {
  local waited=0 log
  log=$(mktemp)
  until $sudo apt-get -qq -o DPkg::Lock::Timeout=$lock_timeout update 2> "$log"; do
    if ! grep -q 'Could not get lock' "$log" || [ $waited -ge $lock_timeout ]; then
      cat "$log" >&2
      rm -f "$log"
      return 1
    fi
    [ $waited -eq 0 ] && echo "memsnap: apt-get update: the package lists are locked by another apt run: waiting"
    sleep 5
    waited=$((waited + 5))
  done
  rm -f "$log"
}
[ ${#missing[@]} -gt 0 ] && update_lists
$sudo apt-get install -y -qq --no-install-recommends --no-upgrade \
  -o DPkg::Lock::Timeout=$lock_timeout "${install[@]}"
