#!/usr/bin/env bash
# ctest install_downstream: installs the build into a temporary prefix, then configures, builds
# and runs tests/install/ (a downstream project: find_package(esi CONFIG REQUIRED), esi::exec)
# against it, and runs the installed esi command. Exit 77 (ctest: skipped) when a tool it
# needs is missing; any other failure is a failed test.
#
#   run_install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX [LAUNCHER [FLAGS]]
#
# FLAGS (e.g. -fsanitize=address,undefined) go to the downstream compile and link, for
# libraries built with them.
set -euo pipefail
build=$1 source=$2 work=$3 generator=$4 cxx=$5 launcher=${6:-} flags=${7:-}

for tool in cmake "$cxx"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "install test skipped: $tool not found"; exit 77; }
done
if [[ "$generator" == Ninja ]] && ! command -v ninja >/dev/null 2>&1; then
  echo "install test skipped: ninja not found"; exit 77
fi

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; exit 1; }
for f in bin/esi include/esi/esm/load.hpp include/esi/method/integrator.hpp; do
  [[ -e "$prefix/$f" ]] || { echo "not installed: $f"; exit 1; }
done
config=$(find "$prefix" -name esiConfig.cmake -print -quit)
[[ -n "$config" && -f "$(dirname "$config")/esiConfigVersion.cmake" ]] ||
  { echo "esiConfig.cmake / esiConfigVersion.cmake not installed"; exit 1; }

echo "== the installed esi command"
"$prefix/bin/esi" validate "$source/tests/install/decay.esm"
# It carries the format's schema when the build had one (ESI_EXPECT_SCHEMA, from CMake) and
# finds it beside itself, before the build's default path.
if [[ -n "${ESI_EXPECT_SCHEMA:-}" && -f "$ESI_EXPECT_SCHEMA" ]]; then
  installed=$(realpath "$prefix")/share/esi/esm-schema.json
  cmp "$ESI_EXPECT_SCHEMA" "$installed" || { echo "schema not installed at $installed"; exit 1; }
  version=$(env -u ESI_SCHEMA "$prefix/bin/esi" --version)
  grep -qxF "schema: $installed" <<<"$version" || { echo "installed esi uses another schema: $version"; exit 1; }
fi

echo "== downstream project"
args=(-G "$generator" -S "$source/tests/install" -B "$work/downstream"
      -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release)
[[ -n "$launcher" ]] && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
[[ -n "$flags" ]] && args+=(-DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags")
cmake "${args[@]}"
cmake --build "$work/downstream"
"$work/downstream/downstream" "$source/tests/install/decay.esm"
