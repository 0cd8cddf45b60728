#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (build-fuzz/, ASan + UBSan) and
#
#   bash scripts/fuzz.sh [--target T] [SECONDS]   fuzzes target T for SECONDS (default 600) on
#                                    fuzz/corpus-work/T/, a work corpus seeded from the target's
#                                    seeds; prints executions and coverage; crashes land in
#                                    build-fuzz/artifacts/T/
#   bash scripts/fuzz.sh --replay    runs every target once over its seeds (-runs=0) and fails if
#                                    any input crashes; this is what scripts/test.sh does
#
# Targets (fuzz/):
#   loader    fuzz_loader.cpp    validate_file, then load_resolved + flatten + describe
#   pipeline  fuzz_pipeline.cpp  load_checked -> flatten -> compile -> a few integrator steps
#   cli       fuzz_cli.cpp       the esi command line in-process (one argument per input line)
# The default target is pipeline. Set ESI_FUZZ_STRICT=1 to make the loader target also abort
# when validate_file throws or a document it accepts is then refused by flatten.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

mode=fuzz
seconds=600
target=pipeline
while [[ $# -gt 0 ]]; do
  case "$1" in
    --replay) mode=replay; shift ;;
    --target) [[ $# -ge 2 ]] || { echo "fuzz.sh: --target needs loader, pipeline or cli" >&2; exit 2; }
              target=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *[!0-9]*) echo "fuzz.sh: expected SECONDS, --target T or --replay, got '$1'" >&2; exit 2 ;;
    *) seconds=$1; shift ;;
  esac
done
case "$target" in loader|pipeline|cli) ;; *) echo "fuzz.sh: unknown target '$target'" >&2; exit 2 ;; esac

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

seeds_of() {  # the seed files of target $1, one per line
  case "$1" in
    cli) find fuzz/seeds_cli -type f ;;
    *) find fuzz/seeds examples -maxdepth 1 -type f \( -name '*.esm' -o -name '*.json' \) ;;
  esac
}
flags_of() {  # libFuzzer flags of target $1
  # Absolute paths: the cli target changes into its scratch folder after its first input.
  local f=(-timeout=20 -rss_limit_mb=4096 "-artifact_prefix=$root/$build/artifacts/$1/")
  case "$1" in
    cli) f+=(-max_len=4096 -close_fd_mask=3 "-dict=$root/fuzz/cli.dict") ;;
    *) f+=(-max_len=65536 "-dict=$root/fuzz/esm.dict") ;;
  esac
  echo "${f[@]}"
}

if [[ $mode == replay ]]; then
  cmake --build "$build" -j 2 --target esi_fuzz_loader esi_fuzz_pipeline esi_fuzz_cli
  for t in loader pipeline cli; do
    replay="$root/$build/replay/$t"
    rm -rf "$replay" && mkdir -p "$replay" "$build/artifacts/$t"
    seeds_of "$t" | while read -r f; do cp "$f" "$replay/"; done
    n=$(find "$replay" -type f | wc -l)
    # shellcheck disable=SC2046
    "$build/esi_fuzz_$t" $(flags_of "$t") -runs=0 "$replay" >"$build/replay_$t.log" 2>&1 || {
      # The report starts at the sanitizer / libFuzzer error line; show it without the shadow map.
      first=$(grep -n -m1 -E 'ERROR: |runtime error|esi fuzz:|deadly signal|Test unit written' \
                "$build/replay_$t.log" | cut -d: -f1)
      sed -n "${first:-1},\$p" "$build/replay_$t.log" | grep -v -E '^ +0x[0-9a-f]+: |^  [A-Z][a-z ]+: +[0-9a-f]' \
        | head -n 60 >&2
      echo "fuzz.sh: replay of $t FAILED; full log $build/replay_$t.log, reproducer in $build/artifacts/$t/" >&2
      exit 1
    }
    echo "fuzz.sh: replayed $n inputs through esi_fuzz_$t without a crash"
  done
  exit 0
fi

cmake --build "$build" -j 2 --target "esi_fuzz_$target"
bin="$build/esi_fuzz_$target"
mkdir -p "$build/artifacts/$target"
work=$root/fuzz/corpus-work/$target
mkdir -p "$work"
seeds_of "$target" | while read -r f; do cp -n "$f" "$work/" 2>/dev/null || true; done
echo "fuzz.sh: fuzzing $target for $seconds s on $work ($(find "$work" -type f | wc -l) inputs)"
log="$build/fuzz_$target.log"
set +e
# shellcheck disable=SC2046
"$bin" $(flags_of "$target") -max_total_time="$seconds" -print_final_stats=1 "$work" 2>&1 |
  tee "$log" | grep -E '^(#[0-9]+.*(pulse|REDUCE|NEW|DONE)|==|SUMMARY|esi fuzz)' | tail -n 40
status=${PIPESTATUS[0]}
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/cov \1, features \2/p')
echo "fuzz.sh: $target: ${execs:-?} executions, ${rate:-?} per second, ${cov:-coverage ?} (limit $seconds s; log $log)"
if [[ $status -ne 0 ]]; then
  echo "fuzz.sh: the fuzzer stopped with status $status; reproducer(s) in $build/artifacts/$target/" >&2
  exit "$status"
fi
