#!/usr/bin/env bash
# Installs the Debian packages EarthSciIntegrator builds and tests with, skipping those already
# installed. Fast (one dpkg-query) when nothing is missing; runs `apt-get update` only when
# something has to be installed. Needs root for that; otherwise it names the missing packages.
set -euo pipefail

packages=(
  cmake ninja-build g++ make
  nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev libeigen3-dev
  librandom123-dev        # Philox-4x32-10 and Box-Muller (header-only), src/core/noise.cpp
  libsundials-dev         # --method CVODE_BDF (src/method/cvode_solver.cpp; KLU for large
                          # systems) and the SUNDIALS peer in bench/bench_stiff.cpp
  clang libclang-rt-dev   # the libFuzzer build (scripts/fuzz.sh, the replay in scripts/test.sh)
                          # and the main stage's clang syntax pass (scripts/clang_syntax.py)
  python3                 # scripts/clang_syntax.py, scripts/check_module_table.py
  libplplot-dev plplot-driver-cairo  # `esi analyze` draws its plots with PLplot (src/plot/): the
                          # C API and, at run time, the memcairo device (PNG) and svg device
  libpng-dev              # src/plot/ encodes the PNG files; tests/plot/ decodes them again
  nettle-dev              # SHA-256 of the native-code cache's objects (src/kernel/native.cpp)
  libnetcdf-dev           # the io module (src/io/): NetCDF-4 output (`esi simulate --output X.nc`)
                          # and NetCDF forcing; the build fails without it
  netcdf-bin python3-netcdf4 python3-xarray  # tests/io/check_netcdf_output.py: ncdump -h and the
                          # output opened with netCDF4 and xarray (skipped when absent)
  pybind11-dev python3-dev python3-numpy python3-pytest  # the Python module (python/, `import esi`:
                          # datasets through python3-xarray) and its pytest suites (tests/python/)
  python3-matplotlib      # examples/python/ozone_box.py (its figures), run by tests/python/test_example.py
  python3-pandas          # Model.sweep over a DataFrame (tests/python/test_example.py)
)

# One dpkg-query for all of them; packages dpkg has never heard of are simply absent from its
# output (it complains on stderr and exits non-zero, which we ignore).
installed=" $(dpkg-query -W -f='${Package}:${db:Status-Status} ' "${packages[@]}" 2>/dev/null || true) "
missing=()
for p in "${packages[@]}"; do
  [[ "$installed" == *" $p:installed "* ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    echo "deps.sh: not root; install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=()
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "deps.sh: installed ${missing[*]}" >&2
