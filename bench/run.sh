#!/usr/bin/env bash
# Herald's benchmark: builds in release mode, starts the fake upstreams and Herald, drives
# POST /_matrix/push/v1/notify with wrk, and prints requests/s, p50/p99 latency, server CPU time
# per request and peak RSS, next to a bare SwiftNIO hello-world measured in the same run.
#
#   bench/run.sh [seconds per run, default 10] [connections, default 64]
#
# With ONLY=regex, only the runs whose names match are made (the bare SwiftNIO baseline always is):
# ONLY='apns' for a quick A/B of the APNs rows.
#
# With PROFILE_DIR=dir, each run of Herald is also sampled with `perf`: its hottest symbols, its
# samples per library, the frames with the largest inclusive share, and folded stacks for a flame
# graph go to dir. PERF_CALLGRAPH='--call-graph dwarf' (with a lower PERF_FREQUENCY, say 199) unwinds
# through Swift's async frames, which frame pointers alone leave as [unknown].
#
# KEEP_WORK=1 keeps the run's folder (its configs, logs, scripts and each row's wrk output); its
# path is the newest /tmp/tmp.*.
#
# Everything listens on 127.0.0.1 only. Figures from one run are comparable with each other;
# the machines are shared, so compare ratios, not absolute numbers across runs.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNECTIONS=${2:-64}
THREADS=2

scripts/deps.sh
# Room for the idle-connection run (10 000 sockets on each side).
ulimit -n 65536 2>/dev/null || true
# BIN=dir runs the binaries already in dir (herald, herald-fakes, bench-hello, bench-floor) without building:
# an A/B run of copies made earlier, undisturbed by edits to the sources meanwhile.
if [ -z "${BIN:-}" ]; then
  echo "Building (release)…" >&2
  scripts/release-build.sh herald herald-fakes bench-hello bench-floor >&2
  BIN=$(scripts/release-build.sh --show-bin-path)
fi
# HERALD=path runs another build of Herald against the same fakes (an A/B comparison).
HERALD=${HERALD:-$BIN/herald}
# FAKES=path likewise runs another build of the fake upstreams.
FAKES=${FAKES:-$BIN/herald-fakes}

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { for _ in $(seq 1 "${WAIT_TRIES:-200}"); do curl -s -o /dev/null "$1" && return 0; sleep 0.05; done; echo "no answer from $1" >&2; exit 1; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
# pg_ticks DIR: the CPU ticks of the PostgreSQL that scripts/postgres.sh started in DIR: its
# postmaster's, every process it started (the backends), and those it reaped (exited backends).
pg_ticks() {
  local pm
  pm=$(head -1 "$1/data/postmaster.pid")
  python3 - "$pm" <<'PY'
import os, sys
pm = sys.argv[1]
def fields(pid):
    text = open(f"/proc/{pid}/stat").read()
    return text[text.rindex(")") + 2:].split()
total = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit(): continue
    try: f = fields(pid)
    except OSError: continue
    if pid == pm: total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    elif f[1] == pm: total += int(f[11]) + int(f[12])
print(total)
PY
}
peak_rss_mib() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }

# Fake upstreams: Web Push, APNs (HTTP/2 + TLS, JWT checks), FCM (OAuth + v1), Huawei Push Kit
# (OAuth + the Android API).
"$FAKES" --directory "$work/fakes" --adamant-devices "${ADAMANT_DEVICES:-10000}" 2>"$work/fakes.log" &
pids+=($!)
for _ in $(seq 1 400); do [ -s "$work/fakes/fakes.json" ] && break; sleep 0.05; done
fake() { python3 -c "import json,sys; d=json.load(open('$work/fakes/fakes.json')); print(eval('d'+sys.argv[1]))" "$1"; }

# Herald, with a Web Push app that may reach the fake on loopback. Every row pushes one device
# thousands of times a second: its apps' per_device_per_minute is set so high that the budget is
# taken for every push (its cost is measured) and never runs out.
HERALD_PORT=$(free_port)
cat > "$work/herald.yaml" <<YAML
http:
  bind_addresses: ['127.0.0.1']
  port: $HERALD_PORT
log:
  level: warning
apps:
  com.example.webpush:
    type: webpush
    vapid_private_key: $work/vapid.pem
    create_vapid_key_if_missing: true
    vapid_contact_email: bench@example.org
    allow_insecure_endpoints: true
    allow_private_endpoints: true
    max_connections: 64
    inflight_request_limit: 100000
    per_device_per_minute: 1000000
  com.example.apns:
    type: apns
    keyfile: $(fake "['apns']['keyfile']")
    key_id: $(fake "['apns']['key_id']")
    team_id: $(fake "['apns']['team_id']")
    topic: $(fake "['apns']['topic']")
    base_url: $(fake "['apns']['base_url']")
    tls_ca_file: $(fake "['apns']['ca_file']")
    max_connections: 2
    inflight_request_limit: 100000
    per_device_per_minute: 1000000
  com.example.fcm:
    type: gcm
    api_version: v1
    project_id: $(fake "['fcm']['project_id']")
    service_account_file: $(fake "['fcm']['service_account_file']")
    base_url: $(fake "['fcm']['base_url']")
    max_connections: 64
    inflight_request_limit: 100000
    per_device_per_minute: 1000000
  com.example.hms:
    type: hms
    api: android
    app_id: '$(fake "['hms']['app_id']")'
    app_secret_file: $(fake "['hms']['app_secret_file']")
    token_url: $(fake "['hms']['token_url']")
    base_url: $(fake "['hms']['base_url']")
    max_connections: 64
    inflight_request_limit: 100000
    per_device_per_minute: 1000000
status:
  store: $work/status.sqlite
  apns_app: com.example.apns
  response_cache_lifetime: 60
relay:
  apns_app: com.example.apns
  topic: $(fake "['apns']['topic']")
  production_base_url: $(fake "['apns']['base_url']")
  development_base_url: $(fake "['apns']['base_url']")
  rate_limit_per_minute: 0
YAML
# COUNT_ALLOCATIONS=1: the main Herald counts its heap allocations (bench/malloc-count.c, preloaded),
# and each of its runs also reports allocations per request. The counting costs a little CPU: compare
# allocations with allocations, and CPU with runs made without it.
preload=()
if [ "${COUNT_ALLOCATIONS:-}" = 1 ]; then
  cc -O2 -shared -fPIC -o "$work/malloc-count.so" bench/malloc-count.c -lpthread
  preload=(env LD_PRELOAD="$work/malloc-count.so" MALLOC_COUNT_FILE="$work/allocations")
fi
# HERALD_WRAP='heaptrack -o dir/herald' runs the main Herald under a tool, e.g. to count allocations
# by caller (heaptrack_print then lists the callers; see docs/operations.md, "Performance").
"${preload[@]}" ${HERALD_WRAP:-} "$HERALD" serve --config "$work/herald.yaml" 2>"$work/herald.log" &
HERALD_PID=$!
pids+=($HERALD_PID)
wait_http "http://127.0.0.1:$HERALD_PORT/health"

# The notify bodies: Sygnal's canonical message, to one device of each pushkin.
python3 - "$work/fakes/fakes.json" "$work" <<'PY'
import json, sys
fakes = json.load(open(sys.argv[1]))
sub = fakes["webpush"]["subscriptions"][0]
devices = {
    "webpush": {"app_id": "com.example.webpush", "pushkey": sub["p256dh"], "data": {"endpoint": sub["endpoint"], "auth": sub["auth"]}},
    "apns": {"app_id": "com.example.apns", "pushkey": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "data": {}},
    "fcm": {"app_id": "com.example.fcm", "pushkey": "dGVzdC1kZXZpY2UtMDAx:APA91bHHHH", "data": {}},
    "hms": {"app_id": "com.example.hms", "pushkey": "IQAAAACy0tEMAAAB-huawei-bench-token", "data": {}},
}
for name, device in devices.items():
    device.update({"pushkey_ts": 1700000000, "tweaks": {"sound": "default"}})
    json.dump({"notification": {
        "event_id": "$3957tyerfgewrf384", "room_id": "!slw48wfj34rtnrf:example.org", "type": "m.room.message",
        "sender": "@exampleuser:matrix.org", "sender_display_name": "Major Tom", "room_name": "Mission Control",
        "room_alias": "#exampleroom:matrix.org", "prio": "high",
        "content": {"msgtype": "m.text", "body": "I'm floating in a most peculiar way."},
        "counts": {"unread": 2, "missed_calls": 1}, "devices": [device]}}, open(f"{sys.argv[2]}/{name}.json", "w"))
# How cost grows with the devices of one request: 10 and 100 APNs devices of one app.
body = json.load(open(f"{sys.argv[2]}/apns.json"))
for count in (10, 100):
    many = []
    for i in range(count):
        device = dict(devices["apns"])
        device["pushkey"] = __import__("base64").b64encode(bytes([i % 256]) * 32).decode()
        many.append(device)
    body["notification"]["devices"] = many
    json.dump(body, open(f"{sys.argv[2]}/apns{count}.json", "w"))
PY

# Bare SwiftNIO baseline.
HELLO_PORT=$(free_port)
"$BIN/bench-hello" "$HELLO_PORT" >/dev/null &
HELLO_PID=$!
pids+=($HELLO_PID)
wait_http "http://127.0.0.1:$HELLO_PORT/"

results=()
wanted() { [ -z "${ONLY:-}" ] || [[ $1 =~ $ONLY ]] || [[ $1 == swiftnio* ]]; }
# run NAME PID URL BODYFILE [LUA] [RATE]: one wrk run with a fixed body, or with a Lua script of its
# own. With RATE (requests/s), the run is paced: each connection waits a random, exponentially
# distributed time (mean CONNECTIONS/RATE) before each request, so requests arrive about as a
# Poisson stream of RATE/s instead of as fast as Herald answers.
# new_events_lua BODYFILE PREFIX [HEADERS]: a wrk script whose every request is a new event (its own
# event_id, PREFIX-thread-n), as a homeserver sends them: the same body again would be a repeat,
# answered from the delivery record without an upstream call. HEADERS: more Lua table entries.
new_events_lua() {
  cat <<LUA
local body = io.open("$1"):read("*a")
local head, tail = body:match('^(.-"event_id": ")[^"]*(".*)$')
local threads = 0
function setup(thread) thread:set("id", threads); threads = threads + 1 end
local n = 0
function request()
  n = n + 1
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"${3:+, $3}}, head .. "\$$2-" .. id .. "-" .. n .. tail)
end
LUA
}
declare -A rates=() cpus=() allocs=() p99s=() pgcpus=() pgxacts=()
# With PG_DIR set (a PostgreSQL of scripts/postgres.sh), a run also measures that database's CPU
# per request (the delivery record's other half), and its committed transactions per request
# (each of the record's statements is one).
PG_DIR=
PG_URL=
pg_xacts() { psql "$PG_URL" -Atc "SELECT sum(xact_commit) FROM pg_stat_database" 2>/dev/null || echo 0; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
IDLE_RSS_MIB=
runs=0
run() {
  local name=$1 pid=$2 url=$3 body=$4 script=${5:-} rate=${6:-}
  wanted "$name" || return 0
  if [ -n "$script" ]; then
    cp "$script" "$work/post.lua"
  else
    runs=$((runs + 1))
    new_events_lua "$body" "r$runs" > "$work/post.lua"
  fi
  if [ -n "$rate" ]; then
    cat >> "$work/post.lua" <<LUA
local mean_ms = $CONNECTIONS * 1000 / $rate
function delay() return -mean_ms * math.log(1 - math.random()) end
LUA
  fi
  # Warm up (not for scripted runs, whose requests must all be new, nor for paced ones); its events
  # are its own ("w" in the id), so the measured run's are all new too.
  if [ -z "$script" ] && [ -z "$rate" ]; then
    sed 's/"\$r/"$w/' "$work/post.lua" > "$work/warm.lua"
    wrk -t1 -c8 -d2s -s "$work/warm.lua" "$url" >/dev/null
  fi
  local before after out allocations_before=""
  if [ "$pid" = "$HERALD_PID" ] && [ -s "$work/allocations" ]; then allocations_before=$(cat "$work/allocations"); fi
  before=$(cpu_ticks "$pid")
  local pg_before="" pg_xacts_before=""
  if [ -n "$PG_DIR" ]; then pg_before=$(pg_ticks "$PG_DIR"); pg_xacts_before=$(pg_xacts); fi
  local perf_pid=""
  if [ -n "${PROFILE_DIR:-}" ]; then
    perf record -F "${PERF_FREQUENCY:-999}" ${PERF_CALLGRAPH:--g} -p "$pid" -o "$work/$name.perf" -- sleep "$DURATION" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --latency -s "$work/post.lua" "$url")
  after=$(cpu_ticks "$pid")
  local pg_after="" pg_xacts_after=""
  if [ -n "$PG_DIR" ]; then pg_after=$(pg_ticks "$PG_DIR"); pg_xacts_after=$(pg_xacts); fi
  if [ -n "$allocations_before" ]; then
    sleep 0.1  # the counter's file is written every 20 ms
    allocs[$name]=$(( ($(cat "$work/allocations") - allocations_before) ))
  fi
  if [ -n "$perf_pid" ]; then
    wait "$perf_pid" || true
    mkdir -p "$PROFILE_DIR"
    perf report -i "$work/$name.perf" --no-children --stdio --percent-limit 0.5 -g none 2>/dev/null \
      | grep -v '^$' > "$PROFILE_DIR/${name// /-}.txt" || true
    perf report -i "$work/$name.perf" --no-children --stdio --sort dso -g none 2>/dev/null \
      | grep -v '^#' | grep -v '^$' > "$PROFILE_DIR/${name// /-}.dso.txt" || true
    perf script -i "$work/$name.perf" 2>/dev/null > "$work/$name.script" || true
    python3 bench/perf-fold.py < "$work/$name.script" > "$PROFILE_DIR/${name// /-}.folded" || true
    python3 bench/perf-fold.py --top 60 < "$work/$name.script" > "$PROFILE_DIR/${name// /-}.top.txt" || true
  fi
  echo "$out" > "$work/$name.wrk"
  local rps p50 p99 requests errors cpu
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  requests=$(awk '/requests in/ {print $1}' <<<"$out")
  errors=$(awk '/Non-2xx/ {print $5}' <<<"$out")
  cpu=$(python3 -c "import os; t=os.sysconf('SC_CLK_TCK'); print(f'{($after-$before)/t/max($requests,1)*1e6:.0f}')")
  rates[$name]=$rps
  cpus[$name]=$cpu
  if [ -n "$pg_before" ]; then
    pgcpus[$name]=$(python3 -c "import os; t=os.sysconf('SC_CLK_TCK'); print(f'{($pg_after-$pg_before)/t/max($requests,1)*1e6:.0f}')")
    pgxacts[$name]=$(python3 -c "print(f'{($pg_xacts_after-$pg_xacts_before)/max($requests,1):.2f}')")
  fi
  p99s[$name]=$p99
  if [ -n "${allocs[$name]:-}" ]; then allocs[$name]=$(( allocs[$name] / (requests > 0 ? requests : 1) )); fi
  results+=("$(printf '%-22s %10s %9s %9s %11s %9s %8s' "$name" "$rps" "$p50" "$p99" "${cpu}µs" "$(peak_rss_mib "$pid")" "${errors:-0}")")
}
# paced NAME: 80 % of the requests/s that the run NAME reached (the rate of its paced run: the
# latency target is a p99 at 80 % of the saturating rate).
paced() { python3 -c "print(max(1, int(float('${rates[$1]:-0}') * 0.8)))"; }

NOTIFY="http://127.0.0.1:$HERALD_PORT/_matrix/push/v1/notify"
run "herald webpush" "$HERALD_PID" "$NOTIFY" "$work/webpush.json"
run "herald apns" "$HERALD_PID" "$NOTIFY" "$work/apns.json"
run "herald fcm v1" "$HERALD_PID" "$NOTIFY" "$work/fcm.json"
run "herald hms" "$HERALD_PID" "$NOTIFY" "$work/hms.json"
# The same notifies at 80 % of the rate each reached above, open loop: latency without the queue
# that 64 connections in a closed loop build on two shared cores.
for row in webpush apns "fcm v1"; do
  if wanted "herald $row" && wanted "herald $row 80%"; then
    run "herald $row 80%" "$HERALD_PID" "$NOTIFY" "$work/${row%% *}.json" "" "$(paced "herald $row")"
  fi
done
# relay_scripts: the relay rows' wrk scripts, relay.lua and relay-warm.lua. The Web Push → APNs
# relay gets Mastodon's aesgcm message (toot-relay's vector), relayed to the fake APNs. Each
# request is a new message, with a salt of its own (Mastodon's every message has one; the same
# body and salt again would be a repeat, answered from the delivery record without an APNs call).
# The relay passes the message on encrypted, so another salt costs it nothing more; the warm-up's
# salts are its own ("w").
relay_scripts() {
  python3 - "$work" <<'PY'
import base64, json, sys
v = json.load(open("Tests/GatewayTests/Fixtures/relay/toot_relay_vectors.json"))["aesgcm"]
body = base64.urlsafe_b64decode(v["body_b64url"] + "=" * (-len(v["body_b64url"]) % 4))
open(f"{sys.argv[1]}/relay.bin", "wb").write(body)
for name, prefix in (("relay", "r"), ("relay-warm", "w")):
    with open(f"{sys.argv[1]}/{name}.lua", "w") as lua:
        lua.write(f'local f = io.open("{sys.argv[1]}/relay.bin", "rb")\nlocal body = f:read("*a")\nf:close()\n')
        lua.write("local headers = {}\n")
        for key, value in v["request_headers"].items():
            if key != "Encryption":
                lua.write(f'headers["{key}"] = "{value}"\n')
        # 22 characters of base64url, the last one 'A': 16 bytes, canonical.
        lua.write("local threads = 0\n")
        lua.write('function setup(thread) thread:set("id", threads); threads = threads + 1 end\n')
        lua.write("local n = 0\nfunction request()\n  n = n + 1\n")
        lua.write(f'  headers["Encryption"] = string.format("salt={prefix}%02d%018dA", id, n)\n')
        lua.write('  return wrk.format("POST", nil, headers, body)\nend\n')
PY
}
# gorush_scripts [N]: gorush.lua and gorush-warm.lua (gorushN.lua and gorushN-warm.lua when N is
# given), a status-go `POST /api/push` of N iOS notifications (one by default) to the APNs rows'
# device, each with a `notif_id` of its own.
gorush_scripts() {
  python3 - "$work" "${1:-}" <<'PY'
import base64, json, sys
pushkey = json.load(open(f"{sys.argv[1]}/apns.json"))["notification"]["devices"][0]["pushkey"]
token = base64.b64decode(pushkey).hex()  # gorush's APNs tokens are hex, Matrix's pushkeys base64
count = int(sys.argv[2] or 1)
one = ('{"tokens":["%s"],"platform":1,"message":"You have a new message",'
       '"notif_id":"%%s%%02d-%%d-%d","data":{"chatId":"0x1"}}')
body = '{"notifications":[' + ",".join(one % (token, i) for i in range(count)) + ']}'
places = ", ".join("prefix, id, n" for _ in range(count))
for name, prefix in ((f"gorush{sys.argv[2]}", "g"), (f"gorush{sys.argv[2]}-warm", "w")):
    with open(f"{sys.argv[1]}/{name}.lua", "w") as lua:
        lua.write(f'local prefix = "{prefix}"\n')
        lua.write("local threads = 0\n")
        lua.write('function setup(thread) thread:set("id", threads); threads = threads + 1 end\n')
        lua.write("local n = 0\nfunction request()\n  n = n + 1\n")
        lua.write(f"  local body = string.format('{body}', {places})\n")
        lua.write('  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)\nend\n')
        # gorush answers 200 with the failed pushes in its `logs`: each such answer is counted in
        # the row's non-2xx column, in wrk's own words, which the row reads (each thread's first
        # is printed in the run's .wrk file).
        lua.write("local all = {}\nlocal setup_first = setup\n")
        lua.write("setup = function(thread) table.insert(all, thread); setup_first(thread) end\n")
        lua.write("failed = 0\n")
        lua.write('function response(status, headers, body)\n  if not body:find(\'"logs":[]\', 1, true) then failed = failed + 1; if failed == 1 then print(body) end end\nend\n')
        lua.write("function done(summary, latency, requests)\n  local n = 0\n")
        lua.write('  for _, t in ipairs(all) do n = n + t:get("failed") end\n')
        lua.write('  if n > 0 then print(string.format("  Non-2xx or 3xx responses: %d", n)) end\nend\n')
PY
}
RELAY_TOKEN=c0ffee0000000000000000000000000000000000000000000000000000000000
RELAY_PATH=/relay-to/production/$RELAY_TOKEN/acct-42
# The delivery record's cost (docs/operations.md, "Once"): the same APNs notifies against Heralds
# whose `notify:` differs, each started alike for its one run (the first row's Herald above also
# warmed up for it, which makes it no fair base): the default (memory record, answer_within
# 20 s); no record; no record and no deadline (each notify waits in its own task, as before the
# record); the record in PostgreSQL.
# variant NAME NOTIFY_YAML [RATE] [PATH SCRIPT] [STATUS_YAML]: a Herald of its own with that
# `notify:` section (and STATUS_YAML added to its `status:`), for one APNs run (paced at RATE
# requests/s when given), or one run of SCRIPT against PATH (after SCRIPT's warm-up, the same
# name with -warm).
variant() {
  local name=$1 notify=$2 rate=${3:-} path=${4:-} script=${5:-} status=${6:-} port pid
  wanted "$name" || return 0
  port=$(free_port)
  sed "s/^  port: $HERALD_PORT\$/  port: $port/" "$work/herald.yaml" |
    awk -v extra="$status" '{ print } /^status:$/ && extra != "" { printf "%s", extra }' > "$work/herald-variant.yaml"
  printf 'notify:\n%b' "$notify" >> "$work/herald-variant.yaml"
  "$HERALD" serve --config "$work/herald-variant.yaml" 2>>"$work/herald-variant.log" &
  pid=$!
  pids+=($pid)
  wait_http "http://127.0.0.1:$port/health"
  if [ -n "$script" ]; then
    wrk -t1 -c8 -d2s -s "${script%.lua}-warm.lua" "http://127.0.0.1:$port$path" >/dev/null
    run "$name" "$pid" "http://127.0.0.1:$port$path" "" "$script" "$rate"
  else
    run "$name" "$pid" "http://127.0.0.1:$port/_matrix/push/v1/notify" "$work/apns.json" "" "$rate"
  fi
  kill "$pid" 2>/dev/null || true
}
variant "herald apns default" '  repeat_window: 7200\n'
variant "herald apns no record" '  repeat_window: 0\n'
variant "herald apns no deadline" '  repeat_window: 0\n  answer_within: 0\n'
if { wanted "herald apns pg record" || wanted "herald relay pg record" || wanted "herald gorush sync pg record" ||
  wanted "herald gorush sync pg record 10"; } && [ "$(id -u)" -eq 0 ] &&
  out=$(scripts/postgres.sh 2>/dev/null); then
  PG_DIR=${out#* }
  PG_URL=${out%% *}
  # PG_RATE=N paces this row, the relay's and gorush's below at N requests/s (a sender's pace:
  # the latency of one request, without the queue of a closed loop; CPU a request at one rate, so
  # that two builds compare without the closed loop's feedback).
  variant "herald apns pg record" "  repeat_store: ${out%% *}\n" "${PG_RATE:-}"
  # The relay on a fleet's record: each message's claim before its APNs call, its finish after.
  if wanted "herald relay pg record"; then
    relay_scripts
    variant "herald relay pg record" "  repeat_store: ${out%% *}\n" "${PG_RATE:-}" "$RELAY_PATH" "$work/relay.lua"
  fi
  # gorush's API in `sync` mode on a fleet's record (`herald gorush sync pg record`): status-go's
  # notifications, each with a `notif_id` of its own (keyed: claimed before its APNs call, its
  # finish written after the answer), to the APNs rows' device.
  if wanted "herald gorush sync pg record"; then
    gorush_scripts
    variant "herald gorush sync pg record" "  repeat_store: ${out%% *}\n" "${PG_RATE:-}" /api/push "$work/gorush.lua" '  gorush:\n    sync: true\n'
  fi
  # The same with ten notifications a request (gorush's clients batch; status-go sends one).
  if wanted "herald gorush sync pg record 10"; then
    gorush_scripts 10
    variant "herald gorush sync pg record 10" "  repeat_store: ${out%% *}\n" "${PG_RATE:-}" /api/push "$work/gorush10.lua" '  gorush:\n    sync: true\n'
  fi
  PG_DIR=
  scripts/postgres.sh stop "${out#* }" >/dev/null 2>&1 || true
  # The memory record at the rate the PostgreSQL row reached, open loop: a Herald's CPU per notify
  # grows as its rate falls (fewer requests share a wake-up, a flush, a write), so this row
  # separates what the record costs from what the lower rate costs.
  if [ -n "${rates["herald apns pg record"]:-}" ]; then
    variant "herald apns default at pg rate" '  repeat_window: 7200\n' "$(python3 -c "print(max(1, int(float('${rates["herald apns pg record"]}'))))")"
  fi
fi
# Two sources (docs/operations.md, "Sources"): a Herald of its own that trusts loopback as its load
# balancer, one source flooding it with APNs notifies on every connection while a quiet one sends
# 20 a second beside it, named by X-Forwarded-For; the row is the quiet source's (its p99).
if wanted "herald apns quiet source"; then
  port=$(free_port)
  sed "s/^  port: $HERALD_PORT\$/  port: $port\n  trusted_proxies: ['127.0.0.1']/" "$work/herald.yaml" > "$work/herald-sources.yaml"
  "$HERALD" serve --config "$work/herald-sources.yaml" 2>>"$work/herald-sources.log" &
  sources_pid=$!
  pids+=($sources_pid)
  wait_http "http://127.0.0.1:$port/health"
  new_events_lua "$work/apns.json" flood '["X-Forwarded-For"] = "203.0.113.7"' > "$work/flood.lua"
  new_events_lua "$work/apns.json" quiet '["X-Forwarded-For"] = "198.51.100.9"' > "$work/quiet.lua"
  wrk -t1 -c"$CONNECTIONS" -d"$((DURATION + 2))s" -s "$work/flood.lua" "http://127.0.0.1:$port/_matrix/push/v1/notify" > "$work/flood.wrk" &
  flood_pid=$!
  sleep 1
  CONNECTIONS_SAVED=$CONNECTIONS
  CONNECTIONS=4
  run "herald apns quiet source" "$sources_pid" "http://127.0.0.1:$port/_matrix/push/v1/notify" "" "$work/quiet.lua" 20
  CONNECTIONS=$CONNECTIONS_SAVED
  wait "$flood_pid" || true
  kill "$sources_pid" 2>/dev/null || true
fi
run "herald apns 10 dev" "$HERALD_PID" "$NOTIFY" "$work/apns10.json"
run "herald apns 100 dev" "$HERALD_PID" "$NOTIFY" "$work/apns100.json"

if wanted "herald status push" || wanted "herald status 1M regs"; then
# Status push requests: distinct signed messages (signature recovery, store lookups, APNs delivery).
# Three thirds of distinct messages: one per status run (an answered message would be a cache hit).
"$FAKES" --directory "$work" --status-load "http://127.0.0.1:$HERALD_PORT" --count 180000 2>>"$work/fakes.log"
status_lua() {
cat > "$work/status$1.lua" <<LUA
local f = io.open("$work/status-requests.bin", "rb")
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
  local third = math.floor(#bodies / 3)
  local body = bodies[((n * $THREADS + offset) % third) + 1 + $1 * third]
  return wrk.format("POST", "/_status/v1/message", {["Content-Type"] = "application/x-protobuf"}, body)
end
LUA
}
status_lua 0
status_lua 1
status_lua 2
run "herald status push" "$HERALD_PID" "http://127.0.0.1:$HERALD_PORT/_status/v1/message" "" "$work/status0.lua"
if wanted "herald status push 80%"; then
  run "herald status push 80%" "$HERALD_PID" "http://127.0.0.1:$HERALD_PORT/_status/v1/message" "" "$work/status2.lua" \
    "$(paced "herald status push")"
fi
# The same push requests against a store that also holds STATUS_REGISTRATIONS other registrations
# (default 1 000 000): a push request must cost the same as with a few.
python3 - "$work/status.sqlite" "${STATUS_REGISTRATIONS:-1000000}" <<'PY'
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=60)
db.executemany(
    "INSERT OR IGNORE INTO status_registrations (public_key, installation_id, version, registration, updated_at) VALUES (?, ?, 1, ?, 0)",
    ((os.urandom(32), "bench", b"\x00" * 120) for _ in range(int(sys.argv[2]))))
db.commit()
print(db.execute("SELECT count(*) FROM status_registrations").fetchone()[0], "registrations", file=sys.stderr)
PY
run "herald status 1M regs" "$HERALD_PID" "http://127.0.0.1:$HERALD_PORT/_status/v1/message" "" "$work/status1.lua"
fi
if wanted "herald relay"; then
relay_scripts
wrk -t1 -c8 -d2s -s "$work/relay-warm.lua" "http://127.0.0.1:$HERALD_PORT$RELAY_PATH" >/dev/null
run "herald relay" "$HERALD_PID" "http://127.0.0.1:$HERALD_PORT$RELAY_PATH" "" "$work/relay.lua"
fi
if wanted "adamant (10k users)"; then
# ADAMANT: a second Herald polls the fake node, where 10 000 users registered by signal, and
# pushes each new chat transaction to the fake APNs. Throughput is transactions pushed per second
# from the moment they are on the chain; CPU is that Herald's per transaction.
ADAMANT_TX=${ADAMANT_TX:-20000}
NODE=$(fake "['adamant']['node']")
ADAMANT_PORT=$(free_port)
cat > "$work/adamant.yaml" <<YAML
http:
  bind_addresses: ['127.0.0.1']
  port: $ADAMANT_PORT
log:
  level: warning
apps:
  com.example.apns:
    type: apns
    keyfile: $(fake "['apns']['keyfile']")
    key_id: $(fake "['apns']['key_id']")
    team_id: $(fake "['apns']['team_id']")
    topic: $(fake "['apns']['topic']")
    base_url: $(fake "['apns']['base_url']")
    tls_ca_file: $(fake "['apns']['ca_file']")
adamant:
  nodes: ['$NODE']
  passphrase_file: $(fake "['adamant']['passphrase_file']")
  apns_app: com.example.apns
  development_base_url: $(fake "['apns']['base_url']")
  startup: initial
  start_height: 0
  poll_interval: 0.1
  signal_poll_interval: 0.1
  store: $work/adamant.sqlite
YAML
"$HERALD" serve --config "$work/adamant.yaml" 2>"$work/adamant.log" &
ADAMANT_PID=$!
pids+=($ADAMANT_PID)
wait_http "http://127.0.0.1:$ADAMANT_PORT/health"
node_state() { curl -s "$NODE/_fake/state" | python3 -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$1"; }
for _ in $(seq 1 600); do [ "$(node_state signals_caught_up)" = "True" ] && break; sleep 0.1; done
sleep 1
base=$(node_state apns_answered)
before=$(cpu_ticks "$ADAMANT_PID")
t0=$(date +%s.%N)
curl -s -X POST "$NODE/_fake/load?count=$ADAMANT_TX&per_block=100" >/dev/null
for _ in $(seq 1 1200); do [ "$(node_state apns_answered)" -ge $((base + ADAMANT_TX)) ] && break; sleep 0.1; done
t1=$(date +%s.%N)
after=$(cpu_ticks "$ADAMANT_PID")
pushed=$(( $(node_state apns_answered) - base ))
results+=("$(python3 -c "
import os
t = os.sysconf('SC_CLK_TCK'); secs = $t1 - $t0; n = max($pushed, 1)
print(f\"{'adamant (10k users)':<22} {n/secs:10.0f} {'-':>9} {'-':>9} {($after-$before)/t/n*1e6:10.0f}µs {'$(peak_rss_mib "$ADAMANT_PID")':>9} {($ADAMANT_TX-$pushed):>8}\")
")")
fi

# A sustained run (SUSTAINED_SECONDS, off by default; the issue asks for 600): APNs notifies the
# whole time, Herald's RSS sampled every 30 s. RSS must stay flat.
if [ "${SUSTAINED_SECONDS:-0}" -gt 0 ]; then
  cat > "$work/sustained.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = io.open("$work/apns.json"):read("*a")
LUA
  samples=()
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"${SUSTAINED_SECONDS}s" -s "$work/sustained.lua" "$NOTIFY" > "$work/sustained.wrk" &
  sustained_wrk=$!
  for _ in $(seq 1 $((SUSTAINED_SECONDS / 30))); do sleep 30; samples+=("$(rss_kib "$HERALD_PID")"); done
  wait "$sustained_wrk" || true
  echo "sustained ${SUSTAINED_SECONDS}s of APNs notifies: $(awk '/Requests\/sec/ {print $2}' "$work/sustained.wrk") req/s; Herald RSS every 30 s (MiB): $(for k in "${samples[@]}"; do awk -v k="$k" 'BEGIN {printf "%.0f ", k / 1024}'; done)" >&2
  results+=("$(printf '%-22s %10s %9s %9s %11s %9s %8s' "sustained apns ${SUSTAINED_SECONDS}s" "$(awk '/Requests\/sec/ {print $2}' "$work/sustained.wrk")" - - - "$(awk -v k="${samples[-1]:-0}" 'BEGIN {printf "%.1f", k / 1024}')" 0)")
fi

if wanted "idle keep-alive conns"; then
# Memory per idle keep-alive connection: 10 000 clients that each made one request and stay open.
# Measured in a Herald of its own, started for it: in the Herald of the runs above, the connections
# would reuse heap those runs freed, and look cheaper than they are. The bare SwiftNIO server is
# measured the same way after its own run.
IDLE=${IDLE_CONNECTIONS:-10000}
# idle_row NAME PORT PID PATH
idle_row() {
python3 - "$@" "$IDLE" <<'PY'
import socket, sys, time
name, port, pid, path, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
before = rss()
sockets = []
for _ in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    sockets.append(s)
for s in sockets:
    s.recv(4096)
time.sleep(1)
after = rss()
print(f"{name:<22} {count:>10} {'-':>9} {'-':>9} {(after - before) / count:9.1f}KiB {after / 1024:9.1f} {0:>8}")
PY
}
IDLE_PORT=$(free_port)
sed "s/^  port: $HERALD_PORT\$/  port: $IDLE_PORT/" "$work/herald.yaml" > "$work/herald-idle.yaml"
"$HERALD" serve --config "$work/herald-idle.yaml" 2>"$work/herald-idle.log" &
IDLE_PID=$!
pids+=($IDLE_PID)
wait_http "http://127.0.0.1:$IDLE_PORT/health"
IDLE_RSS_MIB=$(awk -v k="$(rss_kib "$IDLE_PID")" 'BEGIN {printf "%.1f", k / 1024}')
results+=("$(idle_row "idle keep-alive conns" "$IDLE_PORT" "$IDLE_PID" /health)")
kill "$IDLE_PID"
fi

run "swiftnio hello-world" "$HELLO_PID" "http://127.0.0.1:$HELLO_PORT/_matrix/push/v1/notify" "$work/webpush.json"
# The bare SwiftNIO server's idle connections, after its run (so that its peak above is its own).
if wanted "idle keep-alive conns"; then results+=("$(idle_row "swiftnio idle conns" "$HELLO_PORT" "$HELLO_PID" /)"); fi

# The fakes are not the ceiling: what the fake APNs, FCM and Web Push service answer on their own,
# driven by Herald's own transports with as many requests in flight as wrk's connections (no
# gateway in between).
for target in webpush apns fcm; do
  if wanted "herald $target"; then
    rate=$("$FAKES" --directory "$work/fakes" --drive "$target" --seconds "$DURATION" --concurrency "$CONNECTIONS")
    results+=("$(printf '%-22s %10s %9s %9s %11s %9s %8s' "fake $target alone" "$rate" - - - - 0)")
  fi
done

# The floors (docs/operations.md, "Performance"): what each notify must cost at the least, from this
# run, with nothing of Herald in between. bench-floor drives the same fakes with bare SwiftNIO
# clients (the APNs request over HTTP/2 with as many streams in flight as wrk's connections; an
# HTTP/1.1 keep-alive request to the fake FCM and to the push service), and times the cryptography
# alone; its rows' cpu/req is bench-floor's own CPU per operation.
# floor_row NAME ARGS…: one bench-floor run.
floor_row() {
  local name=$1 out
  shift
  out=$("$BIN/bench-floor" "$@" --seconds "$DURATION")
  cpus[$name]=${out#* }
  results+=("$(printf '%-22s %10s %9s %9s %11s %9s %8s' "$name" "${out%% *}" - - "${out#* }µs" - 0)")
}
APNS_BODY='{"aps":{"alert":{"loc-key":"MSG_FROM_USER_IN_ROOM_WITH_CONTENT","loc-args":["Major Tom","Mission Control","I'"'"'m floating in a most peculiar way."]},"badge":3,"sound":"default"},"room_id":"!slw48wfj34rtnrf:example.org","event_id":"$3957tyerfgewrf384"}'
FCM_BODY='{"message":{"token":"dGVzdC1kZXZpY2UtMDAx:APA91bHHHH","data":{"event_id":"$3957tyerfgewrf384","type":"m.room.message","sender":"@exampleuser:matrix.org","sender_display_name":"Major Tom","room_name":"Mission Control","room_alias":"#exampleroom:matrix.org","prio":"high","unread":"2","missed_calls":"1","content_msgtype":"m.text","content_body":"I'"'"'m floating in a most peculiar way."},"android":{"priority":"HIGH"}}}'
if [ -x "$BIN/bench-floor" ]; then
  if wanted "herald apns"; then
    floor_row "floor apns h2 client" h2 "$(fake "['apns']['base_url']")/3/device/$(printf 'ab%.0s' $(seq 32))" \
      --ca "$(fake "['apns']['ca_file']")" --apns-key "$(fake "['apns']['keyfile']")" --key-id "$(fake "['apns']['key_id']")" \
      --team-id "$(fake "['apns']['team_id']")" -H "apns-topic: $(fake "['apns']['topic']")" -H "apns-push-type: alert" \
      -H "apns-priority: 10" -H "apns-id: 7d3bd4e4-4c51-4cf4-9d1c-1f4ab3a5d0c8" -H "content-type: application/json" \
      --body "$APNS_BODY" --concurrency "$CONNECTIONS"
  fi
  if wanted "herald fcm v1"; then
    # The legacy endpoint (its key needs no OAuth exchange) with a v1-sized body: the same bytes.
    floor_row "floor fcm h1 client" h1 "$(fake "['fcm']['base_url']")/fcm/send" \
      -H "Authorization: key=$(fake "['fcm']['legacy_api_key']")" -H "Content-Type: application/json" \
      --body "$FCM_BODY" --concurrency "$CONNECTIONS"
  fi
  if wanted "herald webpush"; then
    floor_row "floor webpush h1 client" h1 "$(fake "['webpush']['subscriptions'][0]['endpoint']")" \
      -H "Content-Encoding: aes128gcm" -H "TTL: 86400" -H "Urgency: high" -H "Authorization: vapid t=floor, k=floor" \
      --body "$(head -c 300 /dev/zero | tr '\0' 'Z')" --concurrency "$CONNECTIONS"
    floor_row "floor webpush crypto" webpush-crypto
    floor_row "floor vapid signature" vapid
  fi
  if wanted "herald status push"; then floor_row "floor status secp256k1" status-crypto; fi
fi

echo
echo "wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s on $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-22s %10s %9s %9s %11s %9s %8s\n' "run" "req/s" "p50" "p99" "cpu/req" "peakMiB" "non-2xx"
echo "(peakMiB is the process's high-water mark so far: Herald's grows across its runs; the adamant row is a"
echo " second Herald: req/s there is transactions pushed per second, non-2xx the transactions not pushed;"
echo " the apns N dev rows send N devices per request: cpu/req there is per request; the idle rows' req/s"
echo " column is the number of connections held open, and cpu/req the RSS per connection (Herald's in a Herald"
echo " started for it, SwiftNIO's after its run), peakMiB the RSS with them all open; the fake rows are"
echo " what the fake answers alone, driven with the same concurrency: Herald's rows must stay below them;"
echo " the 80% rows are paced at 80 % of the rate of the run above them, as a Poisson stream)"
for r in "${results[@]}"; do echo "$r"; done

# Each Herald row as a multiple of its floor (issue targets: APNs and FCM ≤ 1.5, Web Push ≤ 1.3,
# Status ≤ 1.6, 10 devices ≤ 4 × one). The Status floor leaves out its store read.
python3 - <<PY
cpus = {$(for k in "${!cpus[@]}"; do printf '"%s": %s, ' "$k" "${cpus[$k]}"; done)}
hello = cpus.get("swiftnio hello-world")
def multiple(row, parts):
    if row not in cpus or any(p not in cpus for p in parts): return
    floor = sum(cpus[p] for p in parts)
    print(f"{row:<22} {cpus[row]:>7.0f}µs = {cpus[row] / floor:4.2f} × its floor {floor:.0f}µs ({' + '.join(parts)})")
print()
print("multiples of the floor (cpu/req ÷ the sum of its floor rows, this run)")
multiple("herald apns", ["swiftnio hello-world", "floor apns h2 client"])
multiple("herald fcm v1", ["swiftnio hello-world", "floor fcm h1 client"])
multiple("herald webpush", ["swiftnio hello-world", "floor webpush h1 client", "floor webpush crypto"])
multiple("herald status push", ["swiftnio hello-world", "floor status secp256k1"])
multiple("herald apns 10 dev", ["herald apns"])
# The delivery record in PostgreSQL (issue targets: Herald's CPU ≤ 1.5 × the memory record's,
# PostgreSQL's ≤ the memory record's Herald CPU, both together ≤ 2.5 ×).
pgcpus = {$(for k in "${!pgcpus[@]}"; do printf '"%s": %s, ' "$k" "${pgcpus[$k]}"; done)}
pgxacts = {$(for k in "${!pgxacts[@]}"; do printf '"%s": %s, ' "$k" "${pgxacts[$k]}"; done)}
if "herald apns pg record" in cpus and "herald apns default" in cpus:
    herald, memory = cpus["herald apns pg record"], cpus["herald apns default"]
    pg = pgcpus.get("herald apns pg record")
    print()
    print("the delivery record in PostgreSQL against the memory record (cpu/req, this run)")
    print(f"{'herald':<22} {herald:>7.0f}µs = {herald / memory:4.2f} × the memory record's {memory:.0f}µs")
    if pg is not None:
        print(f"{'postgresql':<22} {pg:>7.0f}µs = {pg / memory:4.2f} ×")
        print(f"{'both':<22} {herald + pg:>7.0f}µs = {(herald + pg) / memory:4.2f} ×")
    if "herald apns pg record" in pgxacts:
        print(f"{'statements per notify':<22} {pgxacts['herald apns pg record']:>7}  (PostgreSQL's committed transactions ÷ notifies)")
others = sorted(k for k in pgcpus if k != "herald apns pg record")
if others:
    print()
    print("PostgreSQL's CPU and statements per request in the other rows on the record (this run)")
    for row in others:
        print(f"{row:<30} {pgcpus[row]:>5}µs  {pgxacts.get(row, '?'):>5} statements")
# The same against the memory record at the PostgreSQL row's rate: what the record costs apart
# from what its lower rate costs (printed whichever other rows ran).
same = cpus.get("herald apns default at pg rate")
if same and "herald apns pg record" in cpus:
    herald, pg = cpus["herald apns pg record"], pgcpus.get("herald apns pg record")
    print()
    print(f"{'at the same rate':<22} {herald:>7.0f}µs = {herald / same:4.2f} × the memory record's {same:.0f}µs at the PostgreSQL row's rate")
    if pg is not None:
        print(f"{'both, same rate':<22} {herald + pg:>7.0f}µs = {(herald + pg) / same:4.2f} ×")
p99s = {$(for k in "${!p99s[@]}"; do printf '"%s": "%s", ' "$k" "${p99s[$k]}"; done)}
def ms(text):
    for unit, scale in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(unit):
            try: return float(text[: -len(unit)]) * scale
            except ValueError: return None
    return None
print()
print("latency and memory targets (p99 at 80 % of the saturating rate ≤ 5 ms; idle RSS ≤ 30 MiB)")
for row in sorted(k for k in p99s if k.endswith(" 80%")):
    value = ms(p99s[row])
    if value is not None: print(f"{row:<26} p99 {value:6.2f} ms")
if "$IDLE_RSS_MIB": print(f"{'idle herald (bench config)':<26} RSS {float('$IDLE_RSS_MIB'):6.1f} MiB")
PY
if [ "${#allocs[@]}" -gt 0 ]; then
  echo
  echo "heap allocations per request (COUNT_ALLOCATIONS=1; malloc, calloc, realloc and aligned allocations)"
  for k in "${!allocs[@]}"; do printf '%-22s %8s\n' "$k" "${allocs[$k]}"; done | sort
fi
