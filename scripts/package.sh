#!/usr/bin/env bash
# Builds a stripped release binary (Swift runtime linked statically) and packs it with the shipped
# config, the systemd unit and the docs:
#   scripts/package.sh [output directory, default dist/]  ->  dist/herald-<version>-linux-<arch>.tar.gz
# HERALD_PACKAGE_CONFIGURATION=debug packs a debug build instead (the packaging test uses it to
# check the tarball's layout without a second full release build).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-dist}
configuration=${HERALD_PACKAGE_CONFIGURATION:-release}
scripts/deps.sh
if [ "$configuration" = release ]; then
  scripts/release-build.sh herald -- --static-swift-stdlib >&2
  bin=$(scripts/release-build.sh --show-bin-path)
else
  swift build -c "$configuration" --product herald >&2
  bin=$(swift build -c "$configuration" --show-bin-path)
fi
version=$("$bin/herald" --version | awk '{print $1}')
name="herald-$version-linux-$(uname -m)"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name/bin" "$stage/$name/share/herald"
cp "$bin/herald" "$stage/$name/bin/herald"
[ "$configuration" = release ] && strip "$stage/$name/bin/herald"
git rev-parse HEAD > "$stage/$name/bin/herald.commit" 2>/dev/null || echo unknown > "$stage/$name/bin/herald.commit"
cp config.yaml README.md LICENSE CHANGELOG.md SECURITY.md "$stage/$name/"
cp -r docs "$stage/$name/docs"
cp contrib/systemd/herald.service contrib/grafana/herald.json "$stage/$name/share/herald/"
mkdir -p "$out"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
echo "$out/$name.tar.gz"
