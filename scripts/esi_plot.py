#!/usr/bin/env python3
"""Renders the plots `esi analyze` describes, with matplotlib's Agg backend (no display).

usage: esi_plot.py [--quiet-missing] PLOTS.json...
       esi_plot.py [--quiet-missing] --stdin      (one PLOTS.json path a line, until end of input)

Each PLOTS.json is {"dir": FOLDER, "plots": [...]}, each plot as exec::plot_data writes it:
line / scatter {id, type, title, xlabel, ylabel, lines: [{label, x, y}]}, heatmap {id, type,
title, xlabel, ylabel, zlabel, x, y, z (one row per y), xscale, yscale}, field_slice /
field_snapshot in the line form (a profile along one axis) or the heatmap form plus
"contours" (iso-levels drawn as lines over a field on two axes); a plot with "skipped"
or "unchanged" is not drawn. Each drawn plot becomes FOLDER/<file>.png and FOLDER/<file>.svg
(file: the plot id made safe as a file name) and, when the plot carries a "hash", then
FOLDER/<file>.hash holding it: esi marks a plot "unchanged" when that file already holds the
hash of the same data and script and both images exist. The hash file is removed before
drawing and written after both images, so an interrupted drawing is redrawn next time.

--stdin lets esi start this process (python's start and matplotlib's import take 0.3-1 s)
while its solves still run, and feed it each analysis's plots as they are written.

Exit status: 0 done, 4 matplotlib is not installed (the message says so unless
--quiet-missing: esi then tries another interpreter and reports the reason itself), 1 bad input.
"""
import json
import math
import os
import sys

DPI = 100  # 640 x 440 pixels


def number(v):
    return math.nan if v is None else float(v)


def main(argv):
    args = argv[1:]
    quiet_missing = "--quiet-missing" in args
    from_stdin = "--stdin" in args
    paths = [a for a in args if a not in ("--quiet-missing", "--stdin")]
    if not paths and not from_stdin:
        print("usage: esi_plot.py [--quiet-missing] PLOTS.json... | --stdin", file=sys.stderr)
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
    # Measured on the EarthSciModels corpus (about 800 plots): placing the title clear of
    # top-side tick labels (which these plots never have) measured every tick label again,
    # a fifth of each draw; a fixed title height draws the same picture.
    matplotlib.rcParams["axes.titley"] = 1.0
    # Text stays text in the SVG (smaller, selectable, no glyph outlines to build).
    matplotlib.rcParams["svg.fonttype"] = "none"
    # Same ids in every run, so unchanged data gives byte-identical SVG files.
    matplotlib.rcParams["svg.hashsalt"] = "esi"
    for path in paths:
        draw(plt, path)
    if from_stdin:
        while True:
            line = sys.stdin.readline()
            if not line:
                break
            if line.strip():
                draw(plt, line.strip())
    return 0


def draw_field(fig, ax, plot):
    """A field plot at one time: a profile (value against the x axis' coordinates, a line per
    run) for one spatial axis, or a pcolormesh over x and y (z: one row per y) with the plot's
    contour levels drawn as lines for two."""
    if "z" not in plot:
        for line in plot["lines"]:
            xs = [number(v) for v in line["x"]]
            ys = [number(v) for v in line["y"]]
            ax.plot(xs, ys, label=line["label"], marker="o" if len(xs) < 30 else None)
        if 1 < len(plot["lines"]) <= 12:
            ax.legend(fontsize="small")
        return
    z = [[number(v) for v in row] for row in plot["z"]]
    mesh = ax.pcolormesh(plot["x"], plot["y"], z, shading="nearest")
    fig.colorbar(mesh, ax=ax, label=plot.get("zlabel", ""))
    finite = [v for row in z for v in row if math.isfinite(v)]
    levels = sorted(l for l in plot.get("contours", []) if finite and min(finite) < l < max(finite))
    if levels and len(plot["x"]) > 1 and len(plot["y"]) > 1:
        lines = ax.contour(plot["x"], plot["y"], z, levels=levels, colors="white", linewidths=1.2)
        ax.clabel(lines, fontsize="small", fmt="%g")
        # Named in the SVG (matplotlib >= 3.8 makes the set one artist; older, a collection a level).
        from matplotlib.artist import Artist
        for artist in [lines] if isinstance(lines, Artist) else lines.collections:
            artist.set_gid("contour_levels")
    ax.set_aspect("auto")


def remove_quietly(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def draw(plt, path):
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    folder = spec["dir"]
    for plot in spec["plots"]:
        if plot.get("skipped") or plot.get("unchanged"):
            continue
        stem = os.path.join(folder, plot["file"])
        remove_quietly(stem + ".hash")
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
        elif plot["type"] in ("field_slice", "field_snapshot"):
            draw_field(fig, ax, plot)
        elif plot["type"] == "heatmap":
            z = [[number(v) for v in row] for row in plot["z"]]
            mesh = ax.pcolormesh(plot["x"], plot["y"], z, shading="nearest")
            fig.colorbar(mesh, ax=ax, label=plot.get("zlabel", ""))
        # A swept parameter generated on a log range is drawn on a log axis.
        if plot.get("xscale") == "log":
            ax.set_xscale("log")
        if plot.get("yscale") == "log":
            ax.set_yscale("log")
        ax.set_xlabel(plot.get("xlabel", ""))
        ax.set_ylabel(plot.get("ylabel", ""))
        ax.set_title(plot.get("title", ""), fontsize="medium")
        # Fixed margins: tight_layout measured every text box and took a third of the time.
        fig.subplots_adjust(left=0.15, right=0.97 if "z" not in plot else 0.99,
                            bottom=0.12, top=0.92)
        # zlib level 1: a little larger files; level 6 (PIL's default) spent ~10 % of the draw
        # compressing.
        fig.savefig(stem + ".png", dpi=DPI, pil_kwargs={"compress_level": 1})
        fig.savefig(stem + ".svg", dpi=DPI, metadata={"Date": None})
        plt.close(fig)
        if plot.get("hash"):
            with open(stem + ".hash", "w", encoding="utf-8") as f:
                f.write(plot["hash"] + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
