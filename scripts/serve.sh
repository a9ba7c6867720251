#!/usr/bin/env bash
# Runs Herald with the shipped config.yaml (a Web Push app; no Apple or Google credentials needed),
# from a release build. The first build compiles every dependency in release mode: about 15 minutes
# on 2 cores; later ones take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/release-build.sh herald >&2
bin=$(scripts/release-build.sh --show-bin-path)
git rev-parse HEAD > "$bin/herald.commit" 2>/dev/null || true
exec "$bin/herald" serve --config "${1:-config.yaml}"
