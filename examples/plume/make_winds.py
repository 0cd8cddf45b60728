#!/usr/bin/env python3
"""Writes the plume example's wind forcing, a CF NetCDF file that `esi run` reads.

usage: python3 examples/plume/make_winds.py OUT.nc

Variables U and V (m/s) on dims (time, y, x), 3-hourly records over one day from 00:00 UTC,
1970-01-01 (model time 0): a wind of 5 m/s that turns from westerly at 06:00 towards
south-westerly by 18:00, with a weak meridional shear. The model blends the two records that
bracket t linearly (Plume.w_wind).
"""
import math
import sys

import netCDF4
import numpy as np

NX, NY = 24, 16


def main(path):
    times = np.arange(0, 86400 + 1, 10800, dtype="f8")
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.8"
        ds.title = "Winds for the EarthSciIntegrator plume example"
        ds.createDimension("time", None)
        ds.createDimension("y", NY)
        ds.createDimension("x", NX)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "seconds since 1970-01-01 00:00:00"
        t.calendar = "proleptic_gregorian"
        t.standard_name = "time"
        t[:] = times
        u = ds.createVariable("U", "f8", ("time", "y", "x"))
        v = ds.createVariable("V", "f8", ("time", "y", "x"))
        u.units = v.units = "m s-1"
        u.long_name = "eastward wind"
        v.long_name = "northward wind"
        y = (np.arange(NY) + 0.5) / NY
        for k, tk in enumerate(times):
            turn = math.radians(35.0) * min(max((tk - 21600.0) / 43200.0, 0.0), 1.0)
            speed = 5.0 * (0.8 + 0.4 * y)[:, None] * np.ones((NY, NX))
            u[k, :, :] = speed * math.cos(turn)
            v[k, :, :] = speed * math.sin(turn)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "plume_winds.nc")
