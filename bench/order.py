#!/usr/bin/env python3
"""Lists the functions of a binary on the code pages that a traced run touched, in the order the
pages were first touched, by their symbol names as the linker knows them (bench/order.sh).

    order.py BINARY PERF_SCRIPT NM READELF_SEGMENTS > scripts/herald.order

PERF_SCRIPT is `perf script --show-mmap-events -F addr` of a `perf record -e page-faults -c 1 -d`
run in which every fault brought in one page (no read-ahead, the binary not in the page cache), so
the faults name every code page the run touched. NM is `nm -S --defined-only BINARY`, and
READELF_SEGMENTS `readelf -lW BINARY`. Every function that overlaps a touched page is listed: a
superset of those that ran, which is what keeps them on as few pages as they can share."""
import bisect, re, sys

binary, script, nm, segments = sys.argv[1:5]

loads = []  # (file offset, virtual address, size in the file) of each PT_LOAD segment
for line in open(segments):
    parts = line.split()
    if parts and parts[0] == "LOAD":
        loads.append((int(parts[1], 16), int(parts[2], 16), int(parts[4], 16)))

functions = []  # (address, end, name), sorted
for line in open(nm, errors="replace"):
    parts = line.split()
    if len(parts) == 4 and parts[2] in "tTwW":
        start = int(parts[0], 16)
        functions.append((start, start + max(int(parts[1], 16), 1), parts[3]))
functions.sort()
starts = [f[0] for f in functions]
longest = max((f[1] - f[0] for f in functions), default=0)

mmap = re.compile(r"PERF_RECORD_MMAP2? .*?\[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ 0x([0-9a-f]+).*? r-xp (\S+)$")
code = []  # (start, length, file offset) of the binary's executable mappings, per process
listed, pages = set(), set()
for line in open(script, errors="replace"):
    match = mmap.search(line)
    if match:
        if match.group(4) == binary:
            code.append((int(match.group(1), 16), int(match.group(2), 16), int(match.group(3), 16)))
        continue
    text = line.strip()
    if not re.fullmatch(r"[0-9a-f]+", text):
        continue
    address = int(text, 16)
    for start, length, offset in code:
        if start <= address < start + length:
            file_offset = address - start + offset
            break
    else:
        continue
    vaddr = next((v + file_offset - o for o, v, s in loads if o <= file_offset < o + s), None)
    if vaddr is None or vaddr >> 12 in pages:
        continue
    pages.add(vaddr >> 12)
    page, end = vaddr & ~0xFFF, (vaddr & ~0xFFF) + 0x1000
    i = bisect.bisect_left(starts, page - longest)
    while i < len(functions) and functions[i][0] < end:
        f_start, f_end, name = functions[i]
        if f_end > page and name not in listed:
            listed.add(name)
            print(name)
        i += 1
print(f"{len(pages)} code pages touched, {len(listed)} functions listed", file=sys.stderr)
