#!/usr/bin/env bash
# Starts a throwaway PostgreSQL on 127.0.0.1 for the PostgreSQL store tests and prints the URL to
# export as HERALD_TEST_POSTGRES_URL and its directory. `scripts/postgres.sh stop DIR` stops it;
# `scripts/postgres.sh start DIR` starts a stopped (or crashed) one again on the same port, as the
# tests that kill the postmaster and the fleet do.
set -euo pipefail
if [ "${1:-}" = "start" ]; then
  dir=$2
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  # After a SIGKILL of the postmaster its backends end by themselves; until then the old shared
  # memory is in use and a start fails, so it is tried again for up to 30 s.
  for _ in $(seq 1 60); do
    if runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "$(cat "$dir/options")" start >/dev/null 2>&1; then
      exit 0
    fi
    sleep 0.5
  done
  echo "postgres: cannot start $dir again (see $dir/log)" >&2
  exit 1
fi
if [ "${1:-}" = "stop" ]; then
  dir=$2
  runuser -u postgres -- "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  exit 0
fi
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "postgres: no server binaries (apt-get install postgresql)" >&2; exit 1; }
# A free port below the kernel's ephemeral range: an outgoing connection never takes it as its
# own local port, which a port from that range could be meanwhile (initdb and the certificates
# take seconds, and the tests that crash the server start it again on the same port).
free_port() {
  python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
high = low - 1 if low > 11000 else 65535
for _ in range(500):
    port = random.randint(10000, high)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
'
}
port=${HERALD_TEST_POSTGRES_PORT:-$(free_port)}
dir=$(mktemp -d /tmp/herald-pg.XXXXXX)
chown postgres "$dir"
runuser -u postgres -- "$bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
# TLS with a throwaway CA (ca.pem beside the data) for the sslmode tests; plain connections stay allowed.
ssl=""
if command -v openssl >/dev/null; then
  (
    cd "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=herald-test-ca" -keyout ca.key -out ca.pem >/dev/null 2>&1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server.key -out server.csr >/dev/null 2>&1
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > ext.cnf
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out server.crt >/dev/null 2>&1
    chown postgres server.key server.crt && chmod 600 server.key
  ) && ssl="-c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key"
fi
echo "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 $ssl" > "$dir/options"
runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "$(cat "$dir/options")" start >/dev/null
echo "postgres://postgres@127.0.0.1:$port/postgres $dir"
