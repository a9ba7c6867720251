#!/usr/bin/env python3
"""docs/architecture.md's module graph, made from Package.swift: a Mermaid graph of Herald's own
library targets and the targets each depends on (the executables and test support left out).

  swift package dump-package | scripts/module-graph.py          # print the graph
  swift package dump-package | scripts/module-graph.py --write  # replace it in docs/architecture.md
  swift package dump-package | scripts/module-graph.py --check  # exit 1 when the page's graph is stale
"""
import json
import sys

DOC = "docs/architecture.md"
BEGIN = "<!-- module graph: made by scripts/module-graph.py from Package.swift -->"
END = "<!-- end of module graph -->"
LEFT_OUT = {"HeraldTestSupport", "herald-fakes", "herald-fuzz", "bench-hello"}


def graph(package):
    own = {t["name"] for t in package["targets"] if t.get("type") in ("regular", "executable") and t["name"] not in LEFT_OUT}
    lines = ["```mermaid", "graph BT"]
    for target in sorted(package["targets"], key=lambda t: t["name"]):
        name = target["name"]
        if name not in own:
            continue
        for dep in target.get("dependencies", []):
            dependency = (dep.get("byName") or dep.get("target") or [None])[0]
            if dependency in own:
                lines.append(f"  {name.replace('-', '_')} --> {dependency.replace('-', '_')}")
    lines.append("```")
    return "\n".join([BEGIN] + lines + [END])


def main():
    made = graph(json.load(sys.stdin))
    if "--write" in sys.argv or "--check" in sys.argv:
        text = open(DOC, encoding="utf-8").read()
        start, end = text.index(BEGIN), text.index(END) + len(END)
        if "--check" in sys.argv:
            if text[start:end] != made:
                print(f"{DOC}: the module graph is not Package.swift's; run scripts/module-graph.py --write", file=sys.stderr)
                return 1
            return 0
        open(DOC, "w", encoding="utf-8").write(text[:start] + made + text[end:])
        return 0
    print(made)
    return 0


if __name__ == "__main__":
    sys.exit(main())
