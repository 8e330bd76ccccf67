#!/usr/bin/env bash
# Installs the Debian 12 packages memsnap needs, only those that are missing.
set -euo pipefail
packages=(build-essential cmake pkg-config clang libclang-rt-14-dev valgrind zstd
          libzstd-dev libdw-dev libelf-dev libjson-c-dev libcmocka-dev gfortran
          libomp-14-dev util-linux gnuplot-nox openmpi-bin libopenmpi-dev groff-base
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "memsnap: installing missing Debian packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "memsnap: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
