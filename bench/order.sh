#!/usr/bin/env bash
# Regenerates scripts/herald.order, the order in which the linker lays out herald's functions.
#
# The kernel maps a program's code in blocks around each page it faults in (64 KiB on Linux).
# Left in the compiler's order, the functions that start-up and the request paths run are spread
# over most of herald's 19 MiB of code, and nearly all of it becomes resident. Laid out first and
# together (release builds compile every module with one section per function,
# scripts/release-build.sh), they take a few MiB (docs/operations.md, "Memory").
#
# How: a trace build of herald (in .build-trace) starts every function on a page of its own, so
# that a page of its code that is touched names the one function on it. bench/run.sh runs its Web
# Push, APNs, FCM, Status and relay rows, and the idle connections, with that Herald under
# `perf record -e page-faults -d`. Before each start the binary is dropped from the page cache, and
# read-ahead on its disk is off for the run (put back at the end), so each fault brings in exactly
# one page and the faults name every function the run executed. bench/order.py lists them in the
# order they were first touched. (Traced in the release build's own layout, the pages touched also
# hold the functions around those that ran: the list was about 40 000 functions, most never run.)
#
#   bench/order.sh [seconds per run, default 3]   (as root: it sets the disk's read-ahead)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
command -v perf >/dev/null || { echo "order: needs perf (Debian's linux-perf)" >&2; exit 1; }
scripts/release-build.sh herald herald-fakes bench-hello >&2
BIN=$(scripts/release-build.sh --show-bin-path)
# The trace build: the same code, each function aligned to a page (its own build folder).
align=(-Xswiftc -Xllvm -Xswiftc -align-all-functions=12 -Xcc -mllvm -Xcc -align-all-functions=12
  -Xcxx -mllvm -Xcxx -align-all-functions=12)
HERALD_RELEASE_BUILD=.build-trace scripts/release-build.sh herald -- "${align[@]}" >&2
binary=$(realpath "$(HERALD_RELEASE_BUILD=.build-trace scripts/release-build.sh --show-bin-path)/herald")
work=$(mktemp -d)
disk=$(lsblk -no PKNAME "$(df --output=source "$binary" | tail -1)" 2>/dev/null || true)
[ -n "$disk" ] || disk=$(basename "$(df --output=source "$binary" | tail -1)")
readahead=/sys/block/$disk/queue/read_ahead_kb
[ -w "$readahead" ] || { echo "order: cannot set $readahead (run as root)" >&2; exit 1; }
saved=$(cat "$readahead")
trap 'echo "$saved" > "$readahead"; rm -rf "$work"' EXIT
echo 0 > "$readahead"
cat > "$work/herald" <<SH
#!/usr/bin/env bash
python3 -c 'import os, sys; os.posix_fadvise(os.open(sys.argv[1], os.O_RDONLY), 0, 0, os.POSIX_FADV_DONTNEED)' "$binary"
exec perf record -q -e page-faults -c 1 -d -o "$work/perf.\$\$.data" -- "$binary" "\$@"
SH
chmod +x "$work/herald"
HERALD="$work/herald" ONLY='herald (webpush|apns|fcm v1|status push|relay|apns 10 dev)$|idle' IDLE_CONNECTIONS=200 \
  WAIT_TRIES=1200 bench/run.sh "${1:-3}" 64 >/dev/null
for data in "$work"/perf.*.data; do perf script -i "$data" --show-mmap-events -F addr 2>/dev/null; done > "$work/faults.txt"
nm -S --defined-only "$binary" > "$work/nm.txt"
readelf -lW "$binary" > "$work/segments.txt"
python3 bench/order.py "$binary" "$work/faults.txt" "$work/nm.txt" "$work/segments.txt" > scripts/herald.order
# The linker does not see the order file as an input: remove the binary so that it is linked again.
rm -f "$BIN/herald"
scripts/release-build.sh herald >&2
echo "scripts/herald.order: $(wc -l < scripts/herald.order) functions; herald relinked in that order" >&2
