#!/usr/bin/env bash
# How a fleet scales on one PostgreSQL: 1, 2 and 3 Herald instances (release build) behind HAProxy,
# started by scripts/fleet.sh, loaded by wrk through the load balancer for SECONDS each (default 10):
#
#   status registrations   distinct new clients registering (one upsert each)
#   status push requests   signed push requests for registered clients (reads, a cache write, APNs)
#   gorush jobs            POST /api/push batches of 10 iOS notifications (a queue insert per batch,
#                          then a claim, an APNs request and a delete per job)
#
# For each row: requests/s at the load balancer, the work done per second as the instances' own
# counters say (registrations stored, push requests answered, gorush jobs delivered to the fake APNs
# during the run), and the CPU each part used (Herald instances together, PostgreSQL, HAProxy, the
# fake APNs), which shows what saturates. Everything shares this machine's cores: read the ratios
# between rows, not the absolute figures.
#
#   bench/fleet.sh [SECONDS]        FLEET_SIZES="1 2 3" by default; BENCH_SKIP_BUILD=1 skips the build
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
sizes=${FLEET_SIZES:-1 2 3}
scripts/deps.sh >&2
command -v wrk >/dev/null || { echo "bench/fleet.sh needs wrk (scripts/deps.sh installs it)" >&2; exit 1; }
# BENCH_SKIP_BUILD=1: use the release binaries already built (to compare a build with the next).
[ -n "${BENCH_SKIP_BUILD:-}" ] || scripts/release-build.sh herald herald-fakes >&2
BIN=$(scripts/release-build.sh --show-bin-path)
work=$(mktemp -d)
export FLEET_DIR=$work/fleet FLEET_BIN=$BIN FLEET_PORT=${FLEET_PORT:-19080}
trap 'scripts/fleet.sh down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
LB=http://127.0.0.1:$FLEET_PORT
metrics_base=$((FLEET_PORT + 200))

ticks() { awk '{s+=$14+$15} END {print s+0}' "$@" 2>/dev/null || echo 0; }
postgres_stats() { for p in $(pgrep -x postgres || true); do echo "/proc/$p/stat"; done; }
# Sum of a series over every instance's metrics.
counter() {
  local n=$1 series=$2 total=0 i
  for i in $(seq 1 "$n"); do
    total=$(curl -s "http://127.0.0.1:$((metrics_base + i))/metrics" \
      | awk -v s="$series" -v t="$total" 'index($0, s" ") == 1 {t += $NF} END {print t}')
  done
  echo "$total"
}

lua_bodies() {
cat > "$work/$1.lua" <<LUA
local f = io.open("$2", "rb")
local data = f:read("*a")
f:close()
local bodies = {}
local pos = 1
while pos <= #data do
  local a, b, c, d = data:byte(pos, pos + 3)
  local len = ((a * 256 + b) * 256 + c) * 256 + d
  bodies[#bodies + 1] = data:sub(pos + 4, pos + 3 + len)
  pos = pos + 4 + len
end
local threads = 0
function setup(thread) thread:set("offset", threads); threads = threads + 1 end
local n = 0
function request()
  n = n + 1
  return wrk.format("POST", "/_status/v1/message", {["Content-Type"] = "application/x-protobuf"}, bodies[((n * 2 + offset) % #bodies) + 1])
end
LUA
}

# One row: wrk for $seconds through the load balancer; prints requests/s, the counter's rate and CPU.
row() {
  local n=$1 name=$2 script=$3 series=$4 per=$5
  local hz pids before_h before_p before_x before_f c0 c1 out rps
  hz=$(getconf CLK_TCK)
  pids=$(for i in $(seq 1 "$n"); do echo "/proc/$(cat "$FLEET_DIR/herald-$i.pid")/stat"; done)
  c0=$(counter "$n" "$series")
  before_h=$(ticks $pids); before_p=$(ticks $(postgres_stats)); before_x=$(ticks "/proc/$(cat "$FLEET_DIR/haproxy.pid")/stat"); before_f=$(ticks "/proc/$(cat "$FLEET_DIR/fakes.pid")/stat")
  out=$(wrk -t2 -c64 -d"${seconds}s" -s "$script" "$LB/" 2>&1)
  c1=$(counter "$n" "$series")
  local h p x f
  h=$(( $(ticks $pids) - before_h )); p=$(( $(ticks $(postgres_stats)) - before_p ))
  x=$(( $(ticks "/proc/$(cat "$FLEET_DIR/haproxy.pid")/stat") - before_x )); f=$(( $(ticks "/proc/$(cat "$FLEET_DIR/fakes.pid")/stat") - before_f ))
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  errors=$(echo "$out" | awk '/Non-2xx/ {print $NF} /Socket errors/ {print}' | tr '\n' ' ')
  awk -v n="$n" -v name="$name" -v rps="$rps" -v c0="$c0" -v c1="$c1" -v s="$seconds" -v per="$per" -v hz="$hz" \
    -v h="$h" -v p="$p" -v x="$x" -v f="$f" -v e="$errors" 'BEGIN {
      printf "| %d | %s | %.0f | %.0f %s | %.0f %% | %.0f %% | %.0f %% | %.0f %% |%s\n", n, name, rps, (c1 - c0) / s, per,
        100 * h / hz / s, 100 * p / hz / s, 100 * x / hz / s, 100 * f / hz / s, (e == "" ? "" : " errors: " e)
    }'
}

cat > "$work/gorush.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local n = 0
function request()
  n = n + 1
  local items = {}
  for i = 1, 10 do
    items[i] = string.format('{"tokens":["%064x"],"platform":1,"message":"bench %d"}', n * 10 + i, n)
  end
  return wrk.format(nil, "/api/push", nil, '{"notifications":[' .. table.concat(items, ",") .. ']}')
end
LUA

echo "| instances | load | requests/s at the load balancer | done/s (the instances' counters) | CPU: Herald | PostgreSQL | HAProxy | fake APNs |"
echo "|---|---|---|---|---|---|---|---|"
for n in $sizes; do
  scripts/fleet.sh up "$n" >&2
  "$BIN/herald-fakes" --directory "$work" --status-registrations "$LB" --count $((seconds * 6000)) 2>>"$work/fakes.log"
  lua_bodies registrations "$work/status-registrations.bin"
  row "$n" "status registrations" "$work/registrations.lua" 'herald_status_registrations_total{result="ok"}' "stored"
  "$BIN/herald-fakes" --directory "$work" --status-load "$LB" --count $((seconds * 6000)) 2>>"$work/fakes.log"
  lua_bodies requests "$work/status-requests.bin"
  row "$n" "status push requests" "$work/requests.lua" 'herald_status_push_requests_total{result="answered"}' "answered"
  row "$n" "gorush jobs (10 a request)" "$work/gorush.lua" 'sygnal_apns_status_codes_total{pushkin="com.example.apns",code="200"}' "delivered"
  scripts/fleet.sh down >&2
done
