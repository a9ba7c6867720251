#!/usr/bin/env python3
"""Folds `perf script` output into one line per stack ("a;b;c count"), the input of flame graph
tools (bench/run.sh with PROFILE_DIR). With --top N it prints instead the N frames with the
largest inclusive share of samples, demangled, which is what the closing notes quote."""
import collections, subprocess, sys

def stacks(lines):
    stack, weight = [], 1
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if stack:
                yield stack[::-1]
            stack = []
            continue
        if line[0] not in " \t":
            continue  # the sample's header line
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            symbol = parts[1].rsplit(" (", 1)[0]
            stack.append(symbol.split("+0x")[0])
    if stack:
        yield stack[::-1]

def main():
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 0
    folded = collections.Counter(";".join(s) for s in stacks(sys.stdin))
    if not top:
        for stack, count in folded.items():
            print(stack, count)
        return
    total = sum(folded.values())
    inclusive = collections.Counter()
    for stack, count in folded.items():
        for frame in set(stack.split(";")):
            inclusive[frame] += count
    names = [name for name, _ in inclusive.most_common(top)]
    try:
        demangled = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(names),
                                   capture_output=True, text=True).stdout.split("\n")
    except OSError:
        demangled = names
    for (name, count), pretty in zip(inclusive.most_common(top), demangled):
        print(f"{100 * count / total:5.1f}%  {pretty[:160]}")

main()
