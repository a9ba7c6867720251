#!/usr/bin/env bash
# Starts a throwaway PostgreSQL on 127.0.0.1 for the PostgreSQL store tests and prints the URL to
# export as HERALD_TEST_POSTGRES_URL. `scripts/postgres.sh stop DIR` stops it.
set -euo pipefail
if [ "${1:-}" = "stop" ]; then
  dir=$2
  runuser -u postgres -- "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  exit 0
fi
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "postgres: no server binaries (apt-get install postgresql)" >&2; exit 1; }
port=${HERALD_TEST_POSTGRES_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
dir=$(mktemp -d /tmp/herald-pg.XXXXXX)
chown postgres "$dir"
runuser -u postgres -- "$bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
echo "postgres://postgres@127.0.0.1:$port/postgres $dir"
