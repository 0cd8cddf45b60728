#!/usr/bin/env python3
"""Renders the plots `esi analyze` describes, with matplotlib's Agg backend (no display).

usage: esi_plot.py [--quiet-missing] [--fresh] PLOTS.json...
       esi_plot.py [--quiet-missing] [--fresh] --stdin   (one PLOTS.json path a line, until end)

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

Plots of one kind are drawn on one figure, cleared between plots (see Figures); --fresh draws
each plot on a new figure instead (slower, the same bytes: for tests).

--stdin lets esi start this process (python's start and matplotlib's import take 0.3-1 s)
while its solves still run, and feed it each analysis's plots as they are written.

Exit status: 0 done, 4 matplotlib is not installed (the message says so unless
--quiet-missing: esi then tries another interpreter and reports the reason itself), 1 bad input.
"""
import functools
import json
import math
import os
import sys

DPI = 100  # 640 x 440 pixels
FIGSIZE = (6.4, 4.4)


def number(v):
    return math.nan if v is None else float(v)


def main(argv):
    args = argv[1:]
    quiet_missing = "--quiet-missing" in args
    from_stdin = "--stdin" in args
    fresh = "--fresh" in args
    paths = [a for a in args if a not in ("--quiet-missing", "--stdin", "--fresh")]
    if not paths and not from_stdin:
        print("usage: esi_plot.py [--quiet-missing] [--fresh] PLOTS.json... | --stdin", file=sys.stderr)
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
    # Tick labels of values below 1e-3 or from 1e4 up are written as a mantissa with the power
    # of ten above the axis (matplotlib's default starts at 1e-5): with fixed margins, labels
    # such as 0.00015 pushed the y label off the picture (coriolis_parameter_vs_latitude).
    matplotlib.rcParams["axes.formatter.limits"] = (-3, 4)
    cache_text_layout()
    figures = Figures(fresh)
    for path in paths:
        draw(plt, path, figures)
    if from_stdin:
        while True:
            line = sys.stdin.readline()
            if not line:
                break
            if line.strip():
                draw(plt, line.strip(), figures)
    return 0


def cache_text_layout():
    """Parses each mathtext label and measures each SVG text once per process.

    Log-axis tick labels ($10^{-3}$) are mathtext: a parse costs ~15 ms (pyparsing) and is
    cached per parser, in 50 entries for all parsers. Each SVG file gets a new renderer with
    its own TextToPath and so its own parser: every SVG parsed its labels again, half of a log
    plot's time. Its text sizes, cached per renderer, were measured again too (~15 % of an
    SVG). Here every SVG renderer shares one TextToPath, the parse cache holds every label (a
    few hundred over the EarthSciModels corpus) and SVG text sizes are cached per process: each
    depends only on the text, font, dpi and math flag, which the cache keys hold (and fonts are
    copied into the key, as matplotlib's own caches do). Another matplotlib without these names
    is left as it is: slower, the same pictures.
    """
    from matplotlib import mathtext, textpath
    from matplotlib.backends import backend_svg
    parse = getattr(mathtext.MathTextParser, "_parse_cached", None)
    if parse is not None and hasattr(parse, "__wrapped__"):
        mathtext.MathTextParser._parse_cached = functools.lru_cache(4096)(parse.__wrapped__)
    base = getattr(backend_svg, "RendererSVG", None)
    if base is None or not hasattr(textpath, "TextToPath"):
        return
    shared = textpath.TextToPath()

    @functools.lru_cache(4096)
    def text_size(text, font, ismath):
        return shared.get_text_width_height_descent(text, font, ismath)

    class RendererSVGSharedText(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._text2path = shared

        def get_text_width_height_descent(self, s, prop, ismath):
            return text_size(s, prop.copy(), ismath)

    backend_svg.RendererSVG = RendererSVGSharedText


class Figures:
    """One figure per plot kind, cleared and drawn again for each plot of that kind.

    A new figure costs its axes, its ticks (each a line and a text) and its renderer, whose
    caches of text sizes and mathtext then start empty: about 40 % of a small plot. Clearing
    puts back everything a fresh figure has (no lines, collections, legend or colorbar; linear
    scales; limits 0-1 with autoscaling; the colour cycle from C0), so a plot gives the same
    PNG and SVG bytes whichever plots came before it (tests/cli/test_cli_analyze.cpp draws
    plots in one process and each alone and compares). --fresh draws each plot on a new figure.
    """

    def __init__(self, fresh):
        self.fresh = fresh
        self.kinds = {}

    def get(self, kind):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        held = None if self.fresh else self.kinds.get(kind)
        if held is None:
            fig = Figure(figsize=FIGSIZE)
            FigureCanvasAgg(fig)
            held = {"fig": fig, "ax": fig.add_subplot(), "colorbar": None}
            self.kinds[kind] = held
        else:
            clear(held)
        return held


def clear(held):
    ax = held["ax"]
    if held["colorbar"] is not None:
        held["colorbar"].remove()  # gives the axes their place back
        held["colorbar"] = None
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    for artist in list(ax.lines) + list(ax.collections) + list(ax.images) + list(ax.patches):
        artist.remove()
    ax.set_xscale("linear")
    ax.set_yscale("linear")
    ax.relim()  # no artists: empty data limits
    # The limits of a fresh axes: a plot with no finite point keeps the view it finds.
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_autoscale_on(True)
    ax.set_prop_cycle(None)  # colours from C0 again


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


def draw_xy(held, plot):
    ax = held["ax"]
    for line in plot["lines"]:
        xs = [number(v) for v in line["x"]]
        ys = [number(v) for v in line["y"]]
        if plot["type"] == "line":
            ax.plot(xs, ys, label=line["label"], marker="o" if len(xs) < 30 else None)
        else:
            ax.scatter(xs, ys, label=line["label"], s=12)
    if 1 < len(plot["lines"]) <= 12:
        ax.legend(fontsize="small")


def draw_heatmap(held, plot):
    z = [[number(v) for v in row] for row in plot["z"]]
    mesh = held["ax"].pcolormesh(plot["x"], plot["y"], z, shading="nearest")
    held["colorbar"] = held["fig"].colorbar(mesh, ax=held["ax"], label=plot.get("zlabel", ""))


def draw(plt, path, figures):
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    folder = spec["dir"]
    for plot in spec["plots"]:
        if plot.get("skipped") or plot.get("unchanged"):
            continue
        stem = os.path.join(folder, plot["file"])
        remove_quietly(stem + ".hash")
        if plot["type"] in ("line", "scatter"):
            held = figures.get("xy")
            draw_xy(held, plot)
        elif plot["type"] in ("field_slice", "field_snapshot"):
            # Contour labels and the aspect are not among what clear() puts back: a new figure.
            held = Figures(True).get("field")
            draw_field(held["fig"], held["ax"], plot)
        elif plot["type"] == "heatmap":
            held = figures.get("heatmap")
            draw_heatmap(held, plot)
        else:
            held = figures.get("other")
        fig, ax = held["fig"], held["ax"]
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
        if plot.get("hash"):
            with open(stem + ".hash", "w", encoding="utf-8") as f:
                f.write(plot["hash"] + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
