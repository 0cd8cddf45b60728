#!/usr/bin/env bash
# Builds the libFuzzer target fuzz/fuzz_loader.cpp with clang (build-fuzz/, ASan + UBSan) and
#
#   bash scripts/fuzz.sh [SECONDS]   fuzzes for SECONDS (default 600) on fuzz/corpus-work/, a
#                                    work corpus seeded from fuzz/seeds/ and examples/; prints
#                                    the number of executions; crashes land in build-fuzz/artifacts/
#   bash scripts/fuzz.sh --replay    runs every seed once (-runs=0) and fails if any input crashes;
#                                    this is what scripts/test.sh does
#
# Set ESI_FUZZ_STRICT=1 to also abort when validate_file throws or when a document it accepts is
# then refused by load_resolved / flatten.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

mode=fuzz
seconds=600
case "${1:-}" in
  "") ;;
  --replay) mode=replay ;;
  -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
  *[!0-9]*) echo "fuzz.sh: expected SECONDS or --replay, got '$1'" >&2; exit 2 ;;
  *) seconds=$1 ;;
esac

bash scripts/deps.sh
command -v clang++ >/dev/null 2>&1 || { echo "fuzz.sh: clang++ not found (apt-get install clang libclang-rt-dev)" >&2; exit 1; }

build=build-fuzz
if [[ ! -f "$build/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DESI_BUILD_FUZZ=ON -DESI_SANITIZE=ON -DESI_BUILD_TESTS=OFF -DESI_BUILD_BENCH=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only"
fi
if ! grep -q '^CMAKE_CXX_COMPILER_ID:.*Clang' "$build/CMakeCache.txt" 2>/dev/null &&
   ! grep -q '^CMAKE_CXX_COMPILER:.*clang' "$build/CMakeCache.txt"; then
  echo "fuzz.sh: $build/ was configured without clang; remove it and rerun" >&2
  exit 1
fi
cmake --build "$build" -j 2 --target esi_fuzz_loader
bin="$build/esi_fuzz_loader"
mkdir -p "$build/artifacts"

flags=(-max_len=65536 -timeout=20 -rss_limit_mb=4096 -dict=fuzz/esm.dict
       "-artifact_prefix=$build/artifacts/")

if [[ $mode == replay ]]; then
  replay="$build/replay"
  rm -rf "$replay" && mkdir -p "$replay"
  cp fuzz/seeds/* examples/*.esm "$replay/"
  n=$(find "$replay" -type f | wc -l)
  "$bin" "${flags[@]}" -runs=0 "$replay" >"$build/replay.log" 2>&1 || {
    # The report starts at the sanitizer / libFuzzer error line; show it without the shadow map.
    first=$(grep -n -m1 -E 'ERROR: |runtime error|esi fuzz:|deadly signal|Test unit written' \
              "$build/replay.log" | cut -d: -f1)
    sed -n "${first:-1},\$p" "$build/replay.log" | grep -v -E '^ +0x[0-9a-f]+: |^  [A-Z][a-z ]+: +[0-9a-f]' \
      | head -n 60 >&2
    echo "fuzz.sh: replay FAILED; full log $build/replay.log, reproducer in $build/artifacts/" >&2
    exit 1
  }
  echo "fuzz.sh: replayed $n inputs through $bin without a crash"
  exit 0
fi

work=fuzz/corpus-work
mkdir -p "$work"
cp -n fuzz/seeds/* examples/*.esm "$work/" 2>/dev/null || true
echo "fuzz.sh: fuzzing for $seconds s on $work ($(find "$work" -type f | wc -l) inputs)"
set +e
"$bin" "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1 "$work" 2>&1 |
  tee "$build/fuzz.log" | grep -E '^(#[0-9]+.*(pulse|REDUCE|NEW|DONE)|==|SUMMARY|esi fuzz)' | tail -n 40
status=${PIPESTATUS[0]}
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz.log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$build/fuzz.log" | tail -n 1)
echo "fuzz.sh: ${execs:-?} executions, ${rate:-?} per second (limit $seconds s; log $build/fuzz.log)"
if [[ $status -ne 0 ]]; then
  echo "fuzz.sh: the fuzzer stopped with status $status; reproducer(s) in $build/artifacts/" >&2
  exit "$status"
fi
