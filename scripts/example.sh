#!/usr/bin/env bash
# The main job on the bundled examples: installs missing Debian packages, builds `esi` in build/,
# then
#  1. runs the 3-D plume example (examples/plume: a NOx-O3 plume advected by winds read from a
#     NetCDF file this script writes, chemistry on lane pools) with `esi run` and its run
#     configuration, and summarizes the CF NetCDF output;
#  2. validates examples/ozone_box.esm, runs its inline tests, simulates it (the run summary on
#     stderr, the CSV and its units sidecar) and runs its inline analysis (a sweep with plots).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/deps.sh
if [[ ! -f build/build.ninja ]]; then
  cmake -G Ninja -S "$root" -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"   # as scripts/test.sh configures it
fi
cmake --build build -j 2 --target esi

# Python with netCDF4 (Debian's python3-netcdf4): $ESI_PYTHON, else python3, else /usr/bin/python3.
py=""
for p in "${ESI_PYTHON:-}" python3 /usr/bin/python3; do
  if [[ -n "$p" ]] && "$p" -c 'import netCDF4' 2>/dev/null; then py=$p; break; fi
done
if [[ -z "$py" ]]; then
  echo "example.sh: no python3 with netCDF4 (Debian: python3-netcdf4); it writes the plume's winds" >&2
  exit 1
fi

plume=examples/plume
mkdir -p build/plume
echo "\$ $py $plume/make_winds.py $plume/plume_winds.nc      # the wind forcing (CF NetCDF, 3-hourly)"
"$py" "$plume/make_winds.py" "$plume/plume_winds.nc"
echo "\$ build/esi run $plume/plume_3d.esm --config $plume/plume_3d.run.json --output build/plume/plume_3d.nc"
build/esi run "$plume/plume_3d.esm" --config "$plume/plume_3d.run.json" --output build/plume/plume_3d.nc
echo
echo "NetCDF output: build/plume/plume_3d.nc (ncdump -h, xarray, ncview and CDO open it)"
"$py" - build/plume/plume_3d.nc <<'PY'
import sys
import netCDF4
with netCDF4.Dataset(sys.argv[1]) as ds:
    t = ds["time"][:]
    no, o3 = ds["Plume_NO"], ds["Plume_O3"]
    print(f"  {len(t)} records, t = {t[0]:g} .. {t[-1]:g} s ({ds['time'].units}); grid "
          f"{ds.dimensions['x'].size} x {ds.dimensions['y'].size} x {ds.dimensions['z'].size}")
    for k in (len(t) // 2, len(t) - 1):
        hour = (t[k] % 86400) / 3600
        surface_no, surface_o3 = no[k, 0, :, :], o3[k, 0, :, :]
        print(f"  {hour:04.1f} h UTC, surface: NO max {surface_no.max():.2f} ppb, O3 from {surface_o3.min():.1f} "
              f"to {surface_o3.max():.1f} ppb (titrated in the plume)")
PY
echo

example=examples/ozone_box.esm
echo "\$ build/esi validate $example"
build/esi validate "$example"
echo
echo "\$ build/esi check $example      # its inline tests (spec 6.6)"
build/esi check "$example"
echo
out=build/ozone_box.csv
echo "\$ build/esi simulate $example --tspan 0 21600 --saveat 3600 --output $out"
build/esi simulate "$example" --tspan 0 21600 --saveat 3600 --output "$out"
echo "(first columns of $out)"
cut -d, -f1-8 "$out"
echo
an=build/ozone_box_analyses
echo "\$ build/esi analyze $example --out $an      # its inline analyses (spec 6.7): sweep, CSV, plots"
build/esi analyze "$example" --out "$an"
for png in "$an"/*/*.png; do
  [[ -f "$png" ]] && echo "plot: $png"
done
echo "(open $an/index.html in a browser: every analysis with its description and plots)"
