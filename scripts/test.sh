#!/usr/bin/env bash
# Runs every test: the RelWithDebInfo build and its ctest suite (unit, corpus, conformance, CLI
# tests and the fuzz seed replay). Installs missing Debian packages first.
#
#   bash scripts/test.sh                 the main stage (the everyday command)
#   bash scripts/test.sh --only asan     the same suite under AddressSanitizer + UBSan (build-asan/)
#   bash scripts/test.sh --only fuzz     seed replay through the clang/libFuzzer build (build-fuzz/)
#   bash scripts/test.sh --all           main, asan and fuzz (what CI runs: .ci/run)
#
# ESI_CORPUS defaults to ../shared/corpus beside the repository when that folder exists; tests
# that need it skip, saying so, when it is absent. Exits non-zero if any stage fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

stages=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --only) [[ $# -ge 2 ]] || { echo "test.sh: --only needs main, asan or fuzz" >&2; exit 2; }
            stages+=("$2"); shift 2 ;;
    --all) stages+=(main asan fuzz); shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
# The sanitizer and libFuzzer builds each recompile everything; on a 2-core machine that would
# push the default run well past 15 minutes, so they are separate stages (make test-asan, make fuzz).
[[ ${#stages[@]} -gt 0 ]] || stages=(main)
wants() { local s; for s in "${stages[@]}"; do [[ "$s" == "$1" ]] && return 0; done; return 1; }

bash scripts/deps.sh

if [[ -z "${ESI_CORPUS:-}" && -d "$root/../shared/corpus" ]]; then
  ESI_CORPUS=$(cd "$root/../shared/corpus" && pwd)
  export ESI_CORPUS
fi
echo "test.sh: ESI_CORPUS=${ESI_CORPUS:-<unset: corpus tests skip>}"

jobs=2
start=$SECONDS
stage() { echo; echo "=== $* ($((SECONDS - start)) s elapsed)"; }

# configure DIR [cmake args...]: configures DIR with Ninja unless it is configured already.
# RelWithDebInfo with line-table debug info (-g1): the same code as -O2 -g, backtraces still
# name file:line, and g++ spends about 30% less time per nlohmann-heavy file. A build/ you
# configured yourself is used as it is.
configure() {
  local dir=$1; shift
  if [[ ! -f "$dir/build.ninja" ]]; then
    cmake -G Ninja -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "$@"
  fi
}

if wants main; then
  stage "main build (build/)"
  # The benchmarks are not tests: a fresh build/ made here leaves them out (about 45 s of a
  # 2-core CI's 15 minutes); `make bench` switches them on and builds them.
  configure build -DESI_BUILD_BENCH=OFF
  cmake --build build -j "$jobs"
  # The fuzz build compiles with clang 14, which rejects some C++20 g++ takes: a syntax-only
  # clang pass over every source catches that here (about 1.5 min the first time, then only
  # the files whose text or project headers changed).
  stage "clang syntax pass (build/clang_syntax/)"
  python3 scripts/clang_syntax.py build --jobs "$jobs"
  stage "ctest (build/)"
  ctest --test-dir build --output-on-failure -j "$jobs"
fi

if wants asan; then
  stage "ASan + UBSan build (build-asan/)"
  # -O1 -g1: with -O2 -g, g++ 12 spends 10-20x longer per file under ASan + UBSan (137 s vs 7 s
  # for src/esm/units/units.cpp), which alone would blow the suite's time budget on two cores.
  configure build-asan -DESI_SANITIZE=ON -DESI_BUILD_BENCH=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1"
  cmake --build build-asan -j "$jobs"
  stage "ctest under ASan + UBSan (build-asan/)"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1} \
  LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/scripts/lsan.supp:print_suppressions=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi

if wants fuzz; then
  if command -v clang++ >/dev/null 2>&1; then
    stage "fuzz seed replay (build-fuzz/)"
    bash scripts/fuzz.sh --replay
  else
    stage "fuzz seed replay skipped: clang++ not found"
  fi
fi

stage "all tests passed"
