#!/usr/bin/env bash
# Fuzzes Herald's parsers with libFuzzer (docs/fuzzing.md).
#   scripts/fuzz.sh [runs per target] [target...]     default: 100000 runs of every target
# Builds `herald-fuzz` with -sanitize=fuzzer into .build-fuzz (a first build takes minutes), then
# runs each target from its seed corpus in fuzz/corpus/<target>/. New inputs libFuzzer finds go to
# a scratch corpus, not the repository; a crash leaves its input in fuzz/findings/ and the script
# exits 1. Reproduce one with `swift run herald-fuzz <target> fuzz/findings/<file>`.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-100000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(json notify status relay gorush)

swift build --build-path .build-fuzz --product herald-fuzz -Xswiftc -sanitize=fuzzer -Xswiftc -DHERALD_FUZZ
fuzzer=$(swift build --build-path .build-fuzz --show-bin-path -Xswiftc -sanitize=fuzzer -Xswiftc -DHERALD_FUZZ)/herald-fuzz

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p fuzz/findings
status=0
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target"
  log="$scratch/$target.log"
  # Swift's own crash backtracer is turned off, so that libFuzzer catches the crash and saves the input.
  if SWIFT_BACKTRACE=enable=no HERALD_FUZZ_TARGET=$target "$fuzzer" "$scratch/$target" "fuzz/corpus/$target" \
      -runs="$runs" -seed=1 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="fuzz/findings/$target-" -print_final_stats=1 >"$log" 2>&1; then
    result=ok
  else
    result="FOUND A CRASH (fuzz/findings/$target-*)"
    status=1
  fi
  done_runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  echo "$target: $done_runs inputs, $coverage, $result"
  [ "$result" = ok ] || tail -40 "$log"
done
exit $status
