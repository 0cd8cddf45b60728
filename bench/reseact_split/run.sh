#!/usr/bin/env bash
# The split-error case of bench/RESULTS.md (issue 13, item 1): reseact_3d_chem at 7 x 7 x 7 with
# NetCDF forcing, Lie / Strang against a Strang 30 s rtol 1e-7 reference and against the
# monolithic IMEX run (KenCarp4: transport explicit, chemistry implicit, no splitting error).
# CHECK=1 also runs the 5 s cross-check of the monolithic run against Rodas5P on the unsplit
# cell form (several CPU minutes more).
# usage: bench/reseact_split/run.sh [OUT_DIR]   (ESI_CORPUS or ../shared/corpus; python3-netcdf4)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
corpus=${ESI_CORPUS:-$root/../shared/corpus}
out=${1:-$root/build/reseact_split}
py=/usr/bin/python3
"$py" "$root/bench/reseact_split/make_case.py" "$corpus" "$root" "$out"
cd "$out"
runs="lie300 lie150 strang300 ref mono mono6"
[ "${CHECK:-0}" = 1 ] && runs="$runs mono5 rodas5"
for c in $runs; do
  native=--native
  [ "$c" = rodas5 ] && native=  # compiling the cell form's 4,459 equations natively takes > 15 min
  /usr/bin/time -f "$c: %e s wall, %U s user" "$root/build/esi" run reseact/prototypes/c/chem7.esm -c $c.run.json \
    -o $c.csv $native --quiet
done
"$py" "$root/bench/reseact_split/compare.py" "$out"
