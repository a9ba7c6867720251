#!/usr/bin/env bash
# Runs the whole test suite: unit tests and end-to-end tests over real sockets against the fakes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
swift build --build-tests
# The shipped config must pass the same validation `herald serve` runs.
scratch=$(mktemp -d)
sed "s#./data/#$scratch/#" config.yaml > "$scratch/config.yaml"
.build/debug/herald check-config --config "$scratch/config.yaml"
rm -rf "$scratch"
swift test --skip-build
