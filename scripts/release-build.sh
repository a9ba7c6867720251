#!/usr/bin/env bash
# Builds products in release mode the way Herald is shipped, benchmarked and served:
#   scripts/release-build.sh PRODUCT… [-- extra swift build arguments]
#   scripts/release-build.sh --show-bin-path
# Every module, the dependencies' too, is compiled with one section per function, so that the
# linker can lay herald's functions out in the order of scripts/herald.order (Package.swift):
# the code that start-up and the request paths run lies together, and far less of the binary
# becomes resident (docs/operations.md, "Memory"). A plain `swift build -c release` builds the
# same program without that layout. These builds have a folder of their own (.build-release, or
# $HERALD_RELEASE_BUILD), so that they and `swift build` never rebuild each other's modules.
set -euo pipefail
cd "$(dirname "$0")/.."
flags=(-c release --scratch-path "${HERALD_RELEASE_BUILD:-.build-release}" -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xcxx -ffunction-sections)
if [ "${1:-}" = --show-bin-path ]; then
  exec swift build "${flags[@]}" --show-bin-path
fi
products=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do products+=("$1"); shift; done
[ "${1:-}" = -- ] && shift
for product in "${products[@]}"; do
  swift build "${flags[@]}" --product "$product" "$@"
done
