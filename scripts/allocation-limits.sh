#!/usr/bin/env bash
# Fails when a notify's heap allocations rise above bench/allocation-limits: bench/run.sh's rows,
# on a release build, with every allocation counted (COUNT_ALLOCATIONS=1). Run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
limits=bench/allocation-limits
rows=$(awk '!/^#/ && NF {NF--; print}' "$limits" | sed 's/^herald //' | paste -sd'|')
out=$(mktemp)
trap 'rm -f "$out"' EXIT
COUNT_ALLOCATIONS=1 ONLY="^herald ($rows)\$" bench/run.sh "${ALLOCATION_SECONDS:-3}" 16 | tee "$out" >&2
check() { python3 - "$limits" "$1" <<'PY'
import re, sys
limits = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    name, limit = line.rsplit(None, 1)
    limits[name.strip()] = int(limit)
text = open(sys.argv[2]).read()
section = text.split("heap allocations per request", 1)
if len(section) < 2:
    sys.exit("allocation-limits: bench/run.sh printed no allocation counts")
counts = {}
for line in section[1].splitlines()[1:]:
    m = re.match(r"^(herald .+?)\s+(\d+)\s*$", line)
    if m:
        counts[m.group(1)] = int(m.group(2))
failed = False
for name, limit in limits.items():
    count = counts.get(name)
    if count is None:
        print(f"allocation-limits: no count for '{name}'")
        failed = True
    elif count > limit:
        print(f"allocation-limits: {name}: {count} allocations per request, above its limit of {limit}")
        failed = True
    else:
        print(f"allocation-limits: {name}: {count} (limit {limit})")
sys.exit(1 if failed else 0)
PY
}
# The check fails on a count above its limit (it is not a test that cannot fail).
over=$(mktemp)
printf 'heap allocations per request\n%s %s\n' "$(awk '!/^#/ && NF {NF--; print; exit}' "$limits")" 999999 > "$over"
if check "$over" >/dev/null; then echo "allocation-limits: the check passed a count above its limit" >&2; exit 1; fi
rm -f "$over"
check "$out"
