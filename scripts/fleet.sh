#!/usr/bin/env bash
# A fleet on this machine: a throwaway PostgreSQL, N Herald instances sharing it for Status, the
# gorush queue and ADAMANT, HAProxy in front (health-checking /health), and the fake upstreams
# (APNs, FCM, Web Push, an ADAMANT node) for them to deliver to. Everything listens on 127.0.0.1.
#
#   scripts/fleet.sh up [N]     start it (N instances, default 3); prints where everything is
#   scripts/fleet.sh status     each instance's health, pid and poll counts, and who holds the ADAMANT lease
#   scripts/fleet.sh down       stop everything and remove the fleet's directory
#   scripts/fleet.sh kill I     SIGKILL instance I;  scripts/fleet.sh start I  starts it again
#   scripts/fleet.sh config I URL [PORT METRICS_PORT]
#                               print instance I's config for the fakes in $FLEET_DIR/fakes/fakes.json
#                               and the PostgreSQL at URL (the fleet chaos test runs with exactly this)
#
# The fleet lives in $FLEET_DIR (default ./run/fleet). Its files (haproxy.cfg, herald-I.yaml) are
# ones an operator could copy: see docs/deployment.md, "A fleet".
set -euo pipefail
cd "$(dirname "$0")/.."
FLEET_DIR=${FLEET_DIR:-$PWD/run/fleet}
LB_PORT=${FLEET_PORT:-18080}
BASE_PORT=$((LB_PORT + 100))     # instance I listens on BASE_PORT+I, its metrics on BASE_PORT+100+I
command=${1:-status}

binaries() {
  # FLEET_BIN: where herald and herald-fakes are (bench/fleet.sh uses a release build).
  if [ -n "${FLEET_BIN:-}" ]; then echo "$FLEET_BIN"; return; fi
  if [ ! -x .build/debug/herald ] || [ ! -x .build/debug/herald-fakes ]; then
    swift build --product herald >&2
    swift build --product herald-fakes >&2
  fi
  echo "$PWD/.build/debug"
}

fake() { python3 -c "import json,sys; d=json.load(open('$FLEET_DIR/fakes/fakes.json')); print(eval('d'+sys.argv[1]))" "$1"; }
wait_http() { for _ in $(seq 1 600); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "fleet: no answer from $1" >&2; return 1; }

instance_config() {
  local i=$1 url=$2 port=${3:-$((BASE_PORT + $1))} metrics_port=${4:-$((BASE_PORT + 100 + $1))}
  cat <<YAML
# Instance $i of the fleet: the same file on every instance but for its ports.
http:
  bind_addresses: ['127.0.0.1']
  port: $port
  shutdown_grace_period: 10
  reuse_port: true
  # The balancer, which names each request's client in X-Forwarded-For: fair shares count the
  # homeservers, not the balancer (docs/operations.md, "Sources").
  trusted_proxies: ['127.0.0.1/32']
log:
  level: notice
metrics:
  prometheus:
    enabled: true
    address: 127.0.0.1
    port: $metrics_port
notify:
  # The fleet shares its delivery record: a homeserver's retry that the load balancer hands to
  # another instance is answered from it instead of being sent again (docs/operations.md, "Once").
  repeat_store: $url
  # A claim of an instance killed mid-call is taken over after this (the default is 60 s).
  repeat_takeover: 30
apps:
  com.example.apns:
    type: apns
    keyfile: $(fake "['apns']['keyfile']")
    key_id: $(fake "['apns']['key_id']")
    team_id: $(fake "['apns']['team_id']")
    topic: $(fake "['apns']['topic']")
    base_url: $(fake "['apns']['base_url']")
    tls_ca_file: $(fake "['apns']['ca_file']")
    # The fakes share two cores with the whole fleet: patient timeouts (the defaults are 10 s).
    connect_timeout: 60
    request_timeout: 60
  com.example.fcm:
    type: gcm
    api_version: v1
    project_id: $(fake "['fcm']['project_id']")
    service_account_file: $(fake "['fcm']['service_account_file']")
    base_url: $(fake "['fcm']['base_url']")
    request_timeout: 60
  com.example.webpush:
    type: webpush
    vapid_private_key: $FLEET_DIR/vapid.pem
    create_vapid_key_if_missing: true
    vapid_contact_email: ops@example.org
    allow_insecure_endpoints: true
    allow_private_endpoints: true
    request_timeout: 60
status:
  store: $url
  apns_app: com.example.apns
  fcm_app: com.example.fcm
  store_timeout: 2
  gorush:
    enabled: true
    # A job whose instance was killed mid-send is handed to another after this (the default is 30 s).
    claim_timeout: 5
adamant:
  nodes: ['$(fake "['adamant']['node']")']
  passphrase_file: $(fake "['adamant']['passphrase_file']")
  apns_app: com.example.apns
  development_base_url: $(fake "['apns']['base_url']")
  poll_interval: 0.2
  signal_poll_interval: 0.2
  lease_retry: 0.5
  lease_check: 0.5
  # The fake node's chain starts empty: read it from its first block.
  startup: initial
  start_height: 0
  store: $url
YAML
}

haproxy_config() {
  local n=$1
  {
    cat <<CFG
# HAProxy in front of the fleet: round robin over the instances that answer GET /health, a
# request retried on another instance only when its connection could not be made (a POST is not
# idempotent: one that reached an instance is never sent to a second), and a request its client
# gave up on aborted at the instance too.
global
  maxconn 4096
  pidfile $FLEET_DIR/haproxy.pid
defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  retries 3
  retry-on conn-failure empty-response
  option redispatch
  # A client that gives up closes the connection to the instance too: Herald then knows at once
  # that its answer went unheard (recommended; "once" does not depend on it: docs/operations.md, "Once").
  option abortonclose
  # Each request names its client, whose share of the instance it draws on.
  option forwardfor
frontend herald
  bind 127.0.0.1:$LB_PORT
  default_backend heralds
backend heralds
  balance roundrobin
  option httpchk GET /health
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1
CFG
    for i in $(seq 1 "$n"); do echo "  server herald$i 127.0.0.1:$((BASE_PORT + i)) check"; done
  } > "$FLEET_DIR/haproxy.cfg"
}

start_instance() {
  local i=$1 bin
  bin=$(binaries)
  "$bin/herald" serve --config "$FLEET_DIR/herald-$i.yaml" >> "$FLEET_DIR/herald-$i.log" 2>&1 &
  echo $! > "$FLEET_DIR/herald-$i.pid"
  wait_http "http://127.0.0.1:$((BASE_PORT + i))/health"
}

case "$command" in
  up)
    n=${2:-3}
    [ -e "$FLEET_DIR/n" ] && { echo "fleet: already up in $FLEET_DIR (scripts/fleet.sh down first)" >&2; exit 1; }
    scripts/deps.sh
    command -v haproxy >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; apt-get install -y -qq haproxy >/dev/null; }
    mkdir -p "$FLEET_DIR"
    bin=$(binaries)
    out=$(scripts/postgres.sh)
    echo "${out#* }" > "$FLEET_DIR/postgres-dir"
    url=${out%% *}
    echo "$url" > "$FLEET_DIR/postgres-url"
    # FLEET_APNS_DELAY: seconds the fake APNs takes to answer (a slow upstream).
    "$bin/herald-fakes" --directory "$FLEET_DIR/fakes" --adamant-devices 1 --apns-delay "${FLEET_APNS_DELAY:-0}" \
      > "$FLEET_DIR/fakes.log" 2>&1 &
    echo $! > "$FLEET_DIR/fakes.pid"
    for _ in $(seq 1 600); do [ -s "$FLEET_DIR/fakes/fakes.json" ] && break; sleep 0.05; done
    echo "$n" > "$FLEET_DIR/n"
    for i in $(seq 1 "$n"); do instance_config "$i" "$url" > "$FLEET_DIR/herald-$i.yaml"; done
    for i in $(seq 1 "$n"); do start_instance "$i"; done
    haproxy_config "$n"
    haproxy -D -f "$FLEET_DIR/haproxy.cfg"
    wait_http "http://127.0.0.1:$LB_PORT/health"
    echo "fleet: $n Heralds behind http://127.0.0.1:$LB_PORT (HAProxy), PostgreSQL $url, fakes in $FLEET_DIR/fakes/fakes.json"
    ;;
  config)
    [ $# -ge 3 ] || { echo "usage: scripts/fleet.sh config I URL [PORT METRICS_PORT]" >&2; exit 2; }
    instance_config "$2" "$3" "${4:-}" "${5:-}"
    ;;
  kill)
    kill -9 "$(cat "$FLEET_DIR/herald-$2.pid")" 2>/dev/null || true
    ;;
  start)
    start_instance "$2"
    ;;
  status)
    [ -e "$FLEET_DIR/n" ] || { echo "fleet: not up"; exit 0; }
    n=$(cat "$FLEET_DIR/n")
    for i in $(seq 1 "$n"); do
      pid=$(cat "$FLEET_DIR/herald-$i.pid" 2>/dev/null || echo -)
      health=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((BASE_PORT + i))/health" || true)
      [ "$health" = "000" ] && health=down
      polls=$( (curl -s "http://127.0.0.1:$((BASE_PORT + 100 + i))/metrics" || true) | awk '/^herald_adamant_polls_total/ {s+=$2} END {print s+0}')
      echo "herald$i pid $pid port $((BASE_PORT + i)) health ${health:-down} adamant polls $polls"
    done
    psql "$(cat "$FLEET_DIR/postgres-url")" -Atc "SELECT 'ADAMANT lease: epoch ' || epoch || ', held by ' || holder FROM adamant_lease" 2>/dev/null || true
    ;;
  down)
    [ -e "$FLEET_DIR" ] || exit 0
    [ -f "$FLEET_DIR/haproxy.pid" ] && kill "$(cat "$FLEET_DIR/haproxy.pid")" 2>/dev/null || true
    for f in "$FLEET_DIR"/herald-*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
    [ -f "$FLEET_DIR/fakes.pid" ] && kill "$(cat "$FLEET_DIR/fakes.pid")" 2>/dev/null || true
    [ -f "$FLEET_DIR/postgres-dir" ] && scripts/postgres.sh stop "$(cat "$FLEET_DIR/postgres-dir")"
    rm -rf "$FLEET_DIR"
    ;;
  *)
    echo "usage: scripts/fleet.sh up [N] | status | kill I | start I | config I URL [PORT METRICS_PORT] | down" >&2
    exit 2
    ;;
esac
