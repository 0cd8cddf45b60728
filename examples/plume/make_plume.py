#!/usr/bin/env python3
"""Writes examples/plume/plume_3d.esm: a NOx-O3 plume advected over a 3-D grid.

Kept beside the document so its structure can be changed in one place; the .esm is committed
and is what esi reads. Run: python3 examples/plume/make_plume.py
"""
import json
import math
import os

NX, NY, NZ = 24, 16, 6
DX, DY, DZ = 4000.0, 4000.0, 250.0
SPECIES = ["NO", "NO2", "O3"]
INITIAL = {"NO": 0.1, "NO2": 1.0, "O3": 40.0}   # ppb, also the inflow background


def op(name, *args, **extra):
    node = {"op": name, "args": list(args)}
    node.update(extra)
    return node


def at(array, *idx):
    return op("index", array, *idx)


def plus(a, b):
    return op("+", a, b)


def minus(a, b):
    return op("-", a, b)


def times(*f):
    return op("*", *f)


def whole(expr, args):
    """expr at every cell (i, j, k)."""
    return op("aggregate", *args, output_idx=["i", "j", "k"],
              ranges={"i": [1, NX], "j": [1, NY], "k": [1, NZ]}, expr=expr)


def upwind(s, wind, axis):
    """-(max(w,0) (s - s_prev) + min(w,0) (s_next - s)) / d along one horizontal axis, with the
    background value flowing in at both walls."""
    n, d = (NX, DX) if axis == "i" else (NY, DY)
    bg = f"{s}_bg"

    def shifted(delta):
        idx = {"i": "i", "j": "j", "k": "k"}
        idx[axis] = plus(axis, delta) if delta > 0 else minus(axis, -delta)
        return at(s, idx["i"], idx["j"], idx["k"])

    here = at(s, "i", "j", "k")
    w = at(wind, "i", "j")

    def flux(prev, nxt):
        return op("/", op("-", plus(times(op("max", w, 0), minus(here, prev)),
                                    times(op("min", w, 0), minus(nxt, here)))), d)

    def box(lo, hi):
        r = {"i": [1, NX], "j": [1, NY], "k": [1, NZ]}
        r[axis] = [lo, hi]
        return [r["i"], r["j"], r["k"]]

    def agg(lo, hi, expr):
        r = {"i": [1, NX], "j": [1, NY], "k": [1, NZ]}
        r[axis] = [lo, hi]
        return op("aggregate", s, wind, output_idx=["i", "j", "k"], ranges=r, expr=expr)

    return op("makearray", regions=[box(2, n - 1), box(1, 1), box(n, n)],
              values=[agg(2, n - 1, flux(shifted(-1), shifted(1))),
                      agg(1, 1, flux(bg, shifted(1))),
                      agg(n, n, flux(shifted(-1), bg))])


def mixing(s):
    """Kz d2s/dz2 with closed top and bottom."""
    def agg(lo, hi, expr):
        return op("aggregate", s, output_idx=["i", "j", "k"],
                  ranges={"i": [1, NX], "j": [1, NY], "k": [lo, hi]}, expr=expr)
    here = at(s, "i", "j", "k")
    up = at(s, "i", "j", plus("k", 1))
    down = at(s, "i", "j", minus("k", 1))
    scale = op("/", "Kz", DZ * DZ)
    box = lambda lo, hi: [[1, NX], [1, NY], [lo, hi]]
    return op("makearray", regions=[box(2, NZ - 1), box(1, 1), box(NZ, NZ)],
              values=[agg(2, NZ - 1, times(scale, plus(minus(up, times(2, here)), down))),
                      agg(1, 1, times(scale, minus(up, here))),
                      agg(NZ, NZ, times(scale, minus(down, here)))])


def chemistry(s):
    no, no2, o3 = (at(x, "i", "j", "k") for x in SPECIES)
    r1 = times("jNO2", no2)            # NO2 + hv -> NO + O3
    r2 = times("k_NO_O3", no, o3)      # NO + O3 -> NO2
    r3 = times("k_NO2_loss", no2)      # NO2 -> HNO3 (NOx sink, OH held fixed)
    rate = {"NO": plus(minus(r1, r2), at("E_NO", "i", "j", "k")),
            "NO2": minus(minus(r2, r1), r3),
            "O3": minus(r1, r2)}[s]
    return whole(rate, SPECIES + ["E_NO"])


def blended(field):
    """(1 - w) F[1,i,j] + w F[2,i,j]: the two wind records bracketing t, blended linearly."""
    return op("aggregate", field, output_idx=["i", "j"], ranges={"i": [1, NX], "j": [1, NY]},
              expr=plus(times(minus(1, "w_wind"), at(field, 1, "i", "j")), times("w_wind", at(field, 2, "i", "j"))))


variables = {}
for s in SPECIES:
    variables[s] = {"type": "unknown", "shape": ["x", "y", "z"], "units": "ppb", "default": INITIAL[s],
                    "description": f"{s} mixing ratio in each grid cell."}
    variables[f"{s}_bg"] = {"type": "parameter", "units": "ppb", "default": INITIAL[s],
                            "description": f"{s} in the air that flows in through the lateral walls."}
variables.update({
    "U": {"type": "parameter", "shape": ["rec", "x", "y"], "units": "m/s",
          "description": "Eastward wind at the two forcing records that bracket t (read from NetCDF by esi run: plume_winds.nc, variable U)."},
    "V": {"type": "parameter", "shape": ["rec", "x", "y"], "units": "m/s",
          "description": "Northward wind at the two forcing records that bracket t (plume_winds.nc, variable V)."},
    "u": {"type": "unknown", "shape": ["x", "y"], "units": "m/s", "description": "Eastward wind at t, blended between the records."},
    "v": {"type": "unknown", "shape": ["x", "y"], "units": "m/s", "description": "Northward wind at t, blended between the records."},
    "w_wind": {"type": "unknown", "units": "1",
               "description": "Position of t between the two wind records (3-hourly, from 00:00 UTC): 0 at a record, rising to 1 at the next."},
    "dt_wind": {"type": "parameter", "units": "s", "default": 10800.0, "description": "Interval between wind records."},
    "Kz": {"type": "parameter", "units": "m^2/s", "default": 20.0, "description": "Vertical eddy diffusivity."},
    "jNO2": {"type": "unknown", "units": "1/s",
             "description": "NO2 photolysis frequency: jmax times the sine of the sun's elevation over a 06:00-18:00 UTC day, 0 at night."},
    "jmax": {"type": "parameter", "units": "1/s", "default": 8.0e-3, "description": "Midday NO2 photolysis frequency."},
    "k_NO_O3": {"type": "parameter", "units": "1/(ppb*s)", "default": 4.4e-4,
                "description": "NO + O3 -> NO2 at 298 K (1.8e-14 cm^3/s times 2.46e10 molec/cm^3 per ppb)."},
    "k_NO2_loss": {"type": "parameter", "units": "1/s", "default": 2.0e-5,
                   "description": "NO2 + OH -> HNO3 with OH held at 2e6 molec/cm^3 (k = 1e-11 cm^3/s)."},
    "E_NO": {"type": "unknown", "shape": ["x", "y", "z"], "units": "ppb/s",
             "description": "NO emission: a surface point source (a power plant) in cell (4, 8, 1), 0 elsewhere."},
    "E_source": {"type": "parameter", "units": "ppb/s", "default": 0.05, "description": "Emission rate into the source cell."},
})

equations = [
    {"lhs": "w_wind", "rhs": minus(op("/", "t", "dt_wind"), op("floor", op("/", "t", "dt_wind")))},
    {"lhs": "jNO2", "rhs": times("jmax", op("max", 0, op("sin", times(math.pi / 43200.0, minus("t", 21600.0)))))},
    {"lhs": "u", "rhs": blended("U")},
    {"lhs": "v", "rhs": blended("V")},
    {"lhs": "E_NO", "rhs": op("makearray", regions=[[[1, NX], [1, NY], [1, NZ]], [[4, 4], [8, 8], [1, 1]]],
                               values=[op("aggregate", output_idx=["i", "j", "k"],
                                          ranges={"i": [1, NX], "j": [1, NY], "k": [1, NZ]}, expr=0.0),
                                       "E_source"])},
]
for s in SPECIES:
    tendency = op("+", upwind(s, "u", "i"), upwind(s, "v", "j"), mixing(s), chemistry(s))
    equations.append({"lhs": op("D", s, wrt="t"), "rhs": tendency})

doc = {
    "esm": "1.0.0",
    "metadata": {
        "name": "Plume3D",
        "description": ("A NOx-O3 plume from a surface point source, advected by time-varying winds over a "
                        f"{NX} x {NY} x {NZ} grid (4 km cells, 250 m layers) and mixed vertically, with three-reaction "
                        "photochemistry in every cell (NO2 photolysis, NO + O3, a NOx sink). Written for "
                        "EarthSciIntegrator as the bundled example of `esi run`: the winds come from a NetCDF file "
                        "(two bracketing records blended in time, as GEOS-FP fields are), transport runs with an "
                        "explicit method over the grid and the chemistry on lane pools with one step per cell."),
        "authors": ["EarthSciIntegrator developers"],
        "license": "MIT",
        "created": "2026-12-02T00:00:00Z",
        "tags": ["example", "chemistry-transport", "nox", "ozone", "3d"],
    },
    "index_sets": {"x": {"kind": "interval", "size": NX}, "y": {"kind": "interval", "size": NY},
                   "z": {"kind": "interval", "size": NZ}, "rec": {"kind": "interval", "size": 2}},
    "coordinates": {
        "x_m": {"values": [DX * (i + 0.5) for i in range(NX)], "standard_name": "projection_x_coordinate",
                "units": "m", "axis": "X"},
        "y_m": {"values": [DY * (j + 0.5) for j in range(NY)], "standard_name": "projection_y_coordinate",
                "units": "m", "axis": "Y"},
        "z_m": {"values": [DZ * (k + 0.5) for k in range(NZ)], "standard_name": "height", "units": "m", "axis": "Z"},
    },
    "models": {"Plume": {"variables": variables, "equations": equations}},
}

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "plume_3d.esm"), "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
