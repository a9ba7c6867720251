#!/usr/bin/env bash
# Installs the Debian packages Herald builds, tests and benchmarks with, when any is missing.
set -euo pipefail
packages=(libssl-dev libsqlite3-dev libsecp256k1-dev libsodium-dev pkg-config postgresql wrk curl haproxy)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
