#!/usr/bin/env bash
# The main job on the bundled example: installs missing Debian packages, builds `esi` in build/,
# validates examples/ozone_box.esm, runs its inline tests, simulates it (the run summary on
# stderr, the CSV and its units sidecar) and runs its inline analysis (a sweep with plots).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

bash scripts/deps.sh
if [[ ! -f build/build.ninja ]]; then
  cmake -G Ninja -S "$root" -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"   # as scripts/test.sh configures it
fi
cmake --build build -j 2 --target esi

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
