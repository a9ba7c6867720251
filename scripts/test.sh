#!/usr/bin/env bash
# Runs the whole test suite: unit tests, and end-to-end tests over real sockets against the fake
# APNs, FCM and Web Push services, with the Status store tests on SQLite and on a real PostgreSQL
# (started here, on 127.0.0.1, unless HERALD_TEST_POSTGRES_URL already names one).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

# Style: the repository's .swift-format, as `swift format --in-place --recursive Sources Tests Package.swift` writes it.
swift format lint --strict --recursive Sources Tests Package.swift

# Package.swift declares for each target exactly the modules its files import (and the check
# catches a product added that nothing imports, and an import the target does not declare).
swift package dump-package > "${TMPDIR:-/tmp}/herald-manifest.json"
python3 scripts/check-imports.py --manifest "${TMPDIR:-/tmp}/herald-manifest.json" --self-test
python3 scripts/check-imports.py --manifest "${TMPDIR:-/tmp}/herald-manifest.json"
# docs/architecture.md's module graph is Package.swift's.
python3 scripts/module-graph.py --check < "${TMPDIR:-/tmp}/herald-manifest.json"
rm -f "${TMPDIR:-/tmp}/herald-manifest.json"

# Herald's own targets build with warnings as errors (Package.swift reads HERALD_WERROR).
export HERALD_WERROR=1
swift build --build-tests

# The shipped config must pass the same validation `herald serve` runs.
scratch=$(mktemp -d)
sed "s#./data/#$scratch/#" config.yaml > "$scratch/config.yaml"
.build/debug/herald check-config --config "$scratch/config.yaml"
rm -rf "$scratch"

pgdir=""
# The tests' scratch files (keys, stores, logs of the processes they start) go to one directory,
# removed when the run ends, whatever its outcome.
testtmp=$(mktemp -d "${TMPDIR:-/tmp}/herald-tests.XXXXXX")
cleanup() {
  rm -rf "$testtmp"
  if [ -n "$pgdir" ]; then scripts/postgres.sh stop "$pgdir"; fi
}
trap cleanup EXIT
if [ -z "${HERALD_TEST_POSTGRES_URL:-}" ] && [ "$(id -u)" -eq 0 ]; then
  if out=$(scripts/postgres.sh); then
    export HERALD_TEST_POSTGRES_URL=${out%% *}
    pgdir=${out#* }
    [ -f "$pgdir/ca.pem" ] && export HERALD_TEST_POSTGRES_CA="$pgdir/ca.pem"
    echo "PostgreSQL for the store tests: $HERALD_TEST_POSTGRES_URL"
  fi
fi
[ -n "${HERALD_TEST_POSTGRES_URL:-}" ] || echo "note: no PostgreSQL; the PostgreSQL store tests are skipped" >&2
# At most eight tests at once: all of them at once on two cores gives each test's connection
# set-up, notify and statement a sliver of a core, and the product's defaults (a 5 s connect
# timeout, a 20 s answer deadline), which the suite runs, would be passed by load alone. Eight
# costs the suite a few seconds. SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH given overrides it.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-8}
TMPDIR=$testtmp swift test --skip-build

# The fleet's chaos test (docs/scaling.md) runs alone, after the rest: it loads both cores for a
# minute, which the other tests need not share. HERALD_CHAOS_SECONDS sets its length (60).
TMPDIR=$testtmp HERALD_CHAOS=1 swift test --skip-build --filter FleetChaosTests

# The package unpacks into an empty directory and runs there.
scripts/test-package.sh

# A notify's heap allocations stay within bench/allocation-limits (a release build; counts are
# stable where CPU time is not).
scripts/allocation-limits.sh
