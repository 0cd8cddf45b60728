#!/usr/bin/env python3
"""Renders the plots `esi analyze` describes, with matplotlib's Agg backend (no display).

usage: esi_plot.py [--quiet-missing] PLOTS.json...

Each PLOTS.json is {"dir": FOLDER, "plots": [...]}, each plot as exec::plot_data writes it:
line / scatter {id, type, title, xlabel, ylabel, lines: [{label, x, y}]}, heatmap {id, type,
title, xlabel, ylabel, zlabel, x, y, z (one row per y), xscale, yscale}; a plot with "skipped"
is not drawn. Each drawn plot becomes FOLDER/<file>.png and FOLDER/<file>.svg (file: the
plot id made safe as a file name).

Exit status: 0 done, 4 matplotlib is not installed (the message says so unless
--quiet-missing: esi then tries another interpreter and reports the reason itself), 1 bad input.
"""
import json
import math
import os
import sys


def number(v):
    return math.nan if v is None else float(v)


def main(argv):
    quiet_missing = len(argv) > 1 and argv[1] == "--quiet-missing"
    if quiet_missing:
        argv = argv[:1] + argv[2:]
    if len(argv) < 2:
        print("usage: esi_plot.py [--quiet-missing] PLOTS.json...", file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        if not quiet_missing:
            print(f"matplotlib is not installed ({e}); install python3-matplotlib",
                  file=sys.stderr)
        return 4
    for path in argv[1:]:
        draw(plt, path)
    return 0


def draw(plt, path):
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    folder = spec["dir"]
    for plot in spec["plots"]:
        if plot.get("skipped"):
            continue
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        if plot["type"] in ("line", "scatter"):
            for line in plot["lines"]:
                xs = [number(v) for v in line["x"]]
                ys = [number(v) for v in line["y"]]
                if plot["type"] == "line":
                    ax.plot(xs, ys, label=line["label"], marker="o" if len(xs) < 30 else None)
                else:
                    ax.scatter(xs, ys, label=line["label"], s=12)
            if 1 < len(plot["lines"]) <= 12:
                ax.legend(fontsize="small")
        elif plot["type"] == "heatmap":
            z = [[number(v) for v in row] for row in plot["z"]]
            mesh = ax.pcolormesh(plot["x"], plot["y"], z, shading="nearest")
            fig.colorbar(mesh, ax=ax, label=plot.get("zlabel", ""))
            if plot.get("xscale") == "log":
                ax.set_xscale("log")
            if plot.get("yscale") == "log":
                ax.set_yscale("log")
        ax.set_xlabel(plot.get("xlabel", ""))
        ax.set_ylabel(plot.get("ylabel", ""))
        ax.set_title(plot.get("title", ""), fontsize="medium")
        # Fixed margins: tight_layout measured every text box and took a third of the time.
        fig.subplots_adjust(left=0.15, right=0.97 if plot["type"] != "heatmap" else 0.99,
                            bottom=0.12, top=0.92)
        for ext in ("png", "svg"):
            fig.savefig(os.path.join(folder, f"{plot['file']}.{ext}"), dpi=120)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
