#!/usr/bin/env python3
"""`esi simulate --output X.nc` read by the tools modellers use (issue 13, "What must be shown" 4).

Runs esi simulate on a small gridded document twice, once to CSV and once to NetCDF, then opens
the NetCDF file with `ncdump -h`, netCDF4 and xarray and asserts its dimensions, coordinates,
units, the CF time axis as xarray decodes it, and every value against the CSV of the same run
(the CSV holds shortest round-trip numbers, so the comparison is ==).

usage: check_netcdf_output.py ESI_BINARY WORK_DIR
Exit 77 (skipped) when netCDF4, xarray or ncdump is missing.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

try:
    import netCDF4
    import numpy as np
    import xarray as xr
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: {e} (install python3-netcdf4 and python3-xarray)")
    sys.exit(77)
if shutil.which("ncdump") is None:
    print("skipped: ncdump not found (install netcdf-bin)")
    sys.exit(77)

DOCUMENT = {
    "esm": "1.0.0",
    "metadata": {"name": "IoGridPython"},
    "index_sets": {"x": {"kind": "interval", "size": 3}, "y": {"kind": "interval", "size": 2}},
    "coordinates": {
        "grid_x": {"values": [10.0, 20.0, 30.0], "standard_name": "projection_x_coordinate",
                   "units": "km", "axis": "X"},
        "y_level": {"source": "yc", "units": "m", "axis": "Y"},
    },
    "models": {"M": {
        "variables": {
            "u": {"type": "unknown", "shape": ["x", "y"], "units": "mol/m^3", "default": 1.0,
                  "description": "tracer concentration"},
            "yc": {"type": "parameter", "shape": ["y"], "units": "1", "default": 1.0},
            "kx": {"type": "parameter", "shape": ["x"], "units": "1", "default": 1.0},
            "k": {"type": "parameter", "units": "1/s", "default": 0.001},
            "s": {"type": "unknown", "units": "K", "default": 300.0},
        },
        "equations": [
            {"lhs": {"op": "D", "args": ["u"], "wrt": "t"},
             "rhs": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "u", "yc", "kx"]}},
            {"lhs": {"op": "D", "args": ["s"], "wrt": "t"}, "rhs": {"op": "*", "args": [0.01, "k"]}},
        ],
    }},
}
INPUTS = {"yc": [1.0, 2.5], "kx": [1.0, 2.0, 3.0]}


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}")
        sys.exit(1)


def main():
    esi, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "grid.esm")
    inputs = os.path.join(work, "inputs.json")
    with open(model, "w") as f:
        json.dump(DOCUMENT, f)
    with open(inputs, "w") as f:
        json.dump(INPUTS, f)
    outputs = {}
    for ext in ("csv", "nc"):
        out = os.path.join(work, "out." + ext)
        for stale in (out, out + ".json", out + ".partial"):
            if os.path.exists(stale):
                os.remove(stale)
        run = subprocess.run([esi, "simulate", model, "--tspan", "0", "100", "--saveat", "25",
                              "--method", "Tsit5", "--inputs", inputs, "--output", out, "--quiet"],
                             capture_output=True, text=True)
        check(run.returncode == 0, f"esi simulate --output {out} exited {run.returncode}: {run.stderr}")
        outputs[ext] = out
    nc_path = outputs["nc"]
    check(not os.path.exists(nc_path + ".partial"), "the .partial file is gone after the run")
    check(not os.path.exists(nc_path + ".json"), "no sidecar for NetCDF output")

    # ncdump -h: the header as NetCDF's own tool prints it.
    dump = subprocess.run(["ncdump", "-h", nc_path], capture_output=True, text=True)
    check(dump.returncode == 0, f"ncdump -h failed: {dump.stderr}")
    for text in ("time = UNLIMITED", "double M_u(time, y, x)", 'M_u:units = "mol/m^3"',
                 ':Conventions = "CF-1.8"', 'time:units = "seconds since 1970-01-01 00:00:00"'):
        check(text in dump.stdout, f"ncdump -h shows {text!r}:\n{dump.stdout}")

    with open(outputs["csv"], newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], [[float(v) for v in r] for r in rows[1:]]
    times = [r[0] for r in body]
    check(len(times) == 5, f"5 output rows, got {len(times)}")

    # netCDF4: raw structure.
    with netCDF4.Dataset(nc_path) as ds:
        check(ds.data_model == "NETCDF4", f"NETCDF4 data model, got {ds.data_model}")
        check(ds.dimensions["time"].isunlimited(), "time is the unlimited dimension")
        check({k: len(v) for k, v in ds.dimensions.items()} == {"time": 5, "x": 3, "y": 2},
              f"dimensions {dict((k, len(v)) for k, v in ds.dimensions.items())}")
        u = ds.variables["M_u"]
        check(u.dimensions == ("time", "y", "x"), f"M_u dims {u.dimensions}")
        check(u.units == "mol/m^3" and u.esm_name == "M.u", "M_u units and esm_name")
        check(u.chunking() == [1, 2, 3], f"M_u chunked one record by the slab: {u.chunking()}")
        check(u.filters()["zlib"] and u.filters()["shuffle"], f"M_u compressed: {u.filters()}")
        check(ds.variables["M_s"].dimensions == ("time",) and ds.variables["M_s"].units == "K", "M_s")
        t = ds.variables["time"]
        check(t.calendar == "proleptic_gregorian" and t.axis == "T" and t.standard_name == "time", "time attrs")
        check(list(t[:]) == times, f"raw times {list(t[:])} == {times}")
        check(ds.Conventions == "CF-1.8", "Conventions")
        check(ds.esi_return_code == "Success", "esi_return_code")
        check("esi simulate" in ds.history, "history names the command")
        check(ds.esi_model_file == model, "esi_model_file")

    # xarray: the CF decoding people rely on.
    with xr.open_dataset(nc_path) as ds:
        expected = np.datetime64("1970-01-01T00:00:00") + np.array([np.timedelta64(int(s), "s") for s in times])
        check((ds["time"].values == expected).all(), f"decoded times {ds['time'].values}")
        check(list(ds["x"].values) == [10.0, 20.0, 30.0], f"x coordinate {ds['x'].values}")
        check(ds["x"].attrs["units"] == "km" and ds["x"].attrs["axis"] == "X", "x attrs")
        check(list(ds["y"].values) == [1.0, 2.5], f"y coordinate from yc {ds['y'].values}")
        check(ds["M_u"].dims == ("time", "y", "x"), f"xarray dims {ds['M_u'].dims}")
        check(ds["M_u"].attrs["units"] == "mol/m^3", "xarray keeps units")
        compared = 0
        for column, name in enumerate(header):
            if name == "t":
                continue
            if name.startswith("M.u["):
                i, j = (int(v) for v in name[len("M.u["):-1].split(","))
                got = ds["M_u"].isel(y=j - 1, x=i - 1).values
            else:
                got = ds[name.replace(".", "_")].values
            want = np.array([r[column] for r in body])
            check((got == want).all(), f"{name}: NetCDF {got} != CSV {want}")
            compared += 1
        check(compared == 7, f"every CSV column compared (6 cells of u and s), got {compared}")
        # The layout would not hide a transposition: u differs along both axes at the end.
        last = ds["M_u"].isel(time=-1).values
        check(last[0, 1] != last[0, 0] and last[1, 0] != last[0, 0], f"u varies along x and y: {last}")
    print("ok: ncdump, netCDF4 and xarray read the output; values equal the CSV")


if __name__ == "__main__":
    main()
