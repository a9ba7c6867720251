#!/usr/bin/env python3
"""Imports and manifest that tell the truth (docs/architecture.md, "Modules").

For every target of Package.swift: each product or target it declares is imported by at least one
of its files, and each module its files import is declared by it (or is the toolchain's own).
Exits 1 and names each mismatch. Run by scripts/test.sh; `--manifest FILE` reads a dump of the
manifest (`swift package dump-package`) instead of making one.
"""
import json
import os
import re
import subprocess
import sys

# Modules of the toolchain and the system, never declared.
SYSTEM = {
    "Foundation", "FoundationEssentials", "Glibc", "Musl", "Darwin", "Dispatch", "Synchronization",
    "_Concurrency", "Testing", "XCTest", "PackageDescription", "os", "CoreFoundation", "Observation",
}
# Products whose module has another name.
MODULES_OF = {"CryptoExtras": {"_CryptoExtras", "CryptoExtras"}, "GRDB": {"GRDB", "GRDBSQLite"}}

IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
    r"(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)",
    re.M)


def manifest():
    if "--manifest" in sys.argv:
        with open(sys.argv[sys.argv.index("--manifest") + 1]) as f:
            return json.load(f)
    out = subprocess.run(["swift", "package", "dump-package"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def declared(target):
    names = {}
    for dep in target.get("dependencies", []):
        for kind in ("byName", "product", "target"):
            if kind in dep:
                name = dep[kind][0]
                names[name] = MODULES_OF.get(name, {name})
    return names


def imports(path):
    found = {}
    for root, _, files in os.walk(path):
        for file in files:
            if not file.endswith(".swift"):
                continue
            full = os.path.join(root, file)
            text = open(full, encoding="utf-8").read()
            # Imports under `#if canImport(X)` are the platform's, not the manifest's.
            for module in IMPORT.findall(text):
                found.setdefault(module, full)
    return found


def check(package):
    problems = []
    for target in package["targets"]:
        if target.get("type") in ("system", "binary", "plugin"):
            continue
        name = target["name"]
        base = "Tests" if target.get("type") == "test" else "Sources"
        path = target.get("path") or os.path.join(base, name)
        if not os.path.isdir(path):
            continue
        wanted = declared(target)
        used = imports(path)
        for dependency, modules in sorted(wanted.items()):
            if not modules & set(used):
                problems.append(f"{name}: declares {dependency}, which none of its files imports")
        known = set().union(*wanted.values()) if wanted else set()
        for module, file in sorted(used.items()):
            if module not in known and module not in SYSTEM and module != name:
                problems.append(f"{name}: {file} imports {module}, which the target does not declare")
    return problems


def self_test(package):
    """The check fails on a product added that nothing imports, and on a declaration taken away."""
    core = next(t for t in package["targets"] if t["name"] == "HeraldCore")
    core["dependencies"].append({"product": ["Yams", "Yams", None, None]})
    added = check(package)
    core["dependencies"].pop()
    logging = next(d for d in core["dependencies"] if "product" in d and d["product"][0] == "Logging")
    core["dependencies"].remove(logging)
    removed = check(package)
    core["dependencies"].append(logging)
    ok = any("HeraldCore: declares Yams" in p for p in added) and any("imports Logging" in p for p in removed)
    print("self-test:", "the check catches both" if ok else "the check missed a mismatch")
    return 0 if ok else 1


def main():
    package = manifest()
    if "--self-test" in sys.argv:
        return self_test(package)
    problems = check(package)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} mismatch(es) between Package.swift and the imports", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
