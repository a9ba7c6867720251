#!/usr/bin/env bash
# Runs Herald with the shipped config.yaml (a Web Push app; no Apple or Google credentials needed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
exec swift run herald serve --config "${1:-config.yaml}"
