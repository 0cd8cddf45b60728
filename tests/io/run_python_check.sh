#!/usr/bin/env bash
# Runs check_netcdf_output.py with a Python that has netCDF4 and xarray: Debian's packages live
# in /usr/bin/python3, which a pyenv or venv python3 first on PATH does not see. Exit 77
# (ctest: skipped) when none has them.
set -u
script="$(dirname "$0")/check_netcdf_output.py"
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c "import netCDF4, xarray" >/dev/null 2>&1; then
    exec "$py" "$script" "$@"
  fi
done
echo "skipped: no python3 with netCDF4 and xarray (install python3-netcdf4 python3-xarray)"
exit 77
