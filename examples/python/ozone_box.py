#!/usr/bin/env python3
"""A first session with esi from Python: load the bundled ozone box, run it for six hours, plot
O3, then sweep two rates over a grid (every run of the sweep is one member, run side by side on
threads) and plot how the ozone at the end responds.

    cmake --build build                # builds the module into build/python
    PYTHONPATH=build/python python3 examples/python/ozone_box.py [OUT_DIR]

Writes OUT_DIR/ozone_o3.png and OUT_DIR/ozone_response.png (OUT_DIR defaults to the current
folder). Needs matplotlib (Debian: python3-matplotlib).
"""
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")  # files, no window
import matplotlib.pyplot as plt
import numpy as np

import esi

here = pathlib.Path(__file__).resolve().parent
out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
out.mkdir(parents=True, exist_ok=True)

model = esi.load(here.parent / "ozone_box.esm")
print(model)

# One run: six hours, an output every ten minutes. The dataset's variables are named like the
# NetCDF output's (dots become underscores); `esm_name` keeps the document's name.
ds = model.simulate((0, 6 * 3600), saveat=600)
o3 = ds["OzoneNOx_O3"]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(ds["time"] / 3600, o3, color="tab:blue")
ax.set_xlabel("time (h)")
ax.set_ylabel(f"O3 ({o3.attrs['units']})")
ax.set_title(f"ozone box, {ds.attrs['esi_method']}, {ds.attrs['esi_accepted']} steps")
fig.tight_layout()
fig.savefig(out / "ozone_o3.png", dpi=120)
print(f"wrote {out / 'ozone_o3.png'}: O3 goes from {float(o3[0]):.3g} to {float(o3[-1]):.3g}")

# A sweep: the NO2 photolysis rate and the NO emission flux on a 12 x 12 grid, 144 members.
jno2 = np.linspace(0.002, 0.012, 12)
e_no = np.linspace(0.0, 4e11, 12)
J, E = np.meshgrid(jno2, e_no)
sweep = model.sweep({"jNO2": J.ravel(), "E_NO": E.ravel()}, (0, 6 * 3600), saveat=3600, threads=2)
final = sweep["Diagnostics_O3_ppb"].isel(time=-1).values.reshape(J.shape)
fig, ax = plt.subplots(figsize=(5.5, 4))
mesh = ax.pcolormesh(jno2, e_no / 1e11, final, shading="auto", cmap="viridis")
fig.colorbar(mesh, ax=ax, label="O3 after 6 h (ppb)")
ax.set_xlabel("jNO2 (1/s)")
ax.set_ylabel("NO emission (1e11 molec/cm^2/s)")
ax.set_title(f"{sweep.sizes['member']} runs in one sweep")
fig.tight_layout()
fig.savefig(out / "ozone_response.png", dpi=120)
print(f"wrote {out / 'ozone_response.png'}: O3 after 6 h between {final.min():.1f} and {final.max():.1f} ppb")
