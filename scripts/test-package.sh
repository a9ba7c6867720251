#!/usr/bin/env bash
# The package, as an operator gets it: scripts/package.sh (a debug build unless
# HERALD_PACKAGE_CONFIGURATION=release), unpacked into an empty directory and run there:
# --version, check-config, then serve until /health answers, then SIGTERM and a clean exit.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
tarball=$(HERALD_PACKAGE_CONFIGURATION=${HERALD_PACKAGE_CONFIGURATION:-debug} scripts/package.sh "$work/dist" | tail -1)
mkdir "$work/root"
tar -C "$work/root" -xzf "$tarball"
dir=$(echo "$work"/root/herald-*)
for f in bin/herald bin/herald.commit config.yaml README.md LICENSE CHANGELOG.md docs/configuration.md \
  share/herald/herald.service share/herald/herald.json; do
  [ -e "$dir/$f" ] || { echo "package: $f is missing" >&2; exit 1; }
done
"$dir/bin/herald" --version
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir "$work/run"
sed -e "s#port: 5000#port: $port#" -e "s#enabled: true\(.*\)#enabled: false\1#" "$dir/config.yaml" > "$work/run/config.yaml"
cd "$work/run"
"$dir/bin/herald" check-config --config config.yaml
"$dir/bin/herald" serve --config config.yaml 2>"$work/serve.log" &
pid=$!
for _ in $(seq 1 200); do curl -fs -o /dev/null "http://127.0.0.1:$port/health" && break; sleep 0.05; done
curl -fsS -o /dev/null "http://127.0.0.1:$port/health"
kill -TERM "$pid"
wait "$pid"
pid=""
echo "package: $(basename "$tarball") unpacked and ran"
