#!/usr/bin/env python3
"""Differences of each run's final state from the references (make_case.py's runs).

usage: compare.py DIR   (reads DIR/{lie300,lie150,strang300,ref,mono,mono6}.csv and, when
                         present, DIR/{mono5,rodas5}.csv)

For each pair: the relative L2 difference over every column but time (dominated by the air mass
Transport3D.m, which chemistry does not change, and CO), the same over the chemistry species
(SuperFast.*) only, and the worst species' largest absolute difference over the cells divided by
its largest reference value.
"""
import csv
import math
import os
import sys


def final(path):
    rows = list(csv.reader(open(path)))
    return rows[0], [float(x) for x in rows[-1]]


def differences(run, reference):
    h, v = final(run)
    names, ref = final(reference)
    if h != names:  # the cell form (Rodas5P) orders and names some columns differently
        at = {n: i for i, n in enumerate(names)}
        keep = [i for i, n in enumerate(h) if n in at and i > 0]
        h = ["t"] + [h[i] for i in keep]
        ref = [ref[0]] + [ref[at[n]] for n in h[1:]]
        v = [v[0]] + [v[i] for i in keep]
    rel = lambda pairs: math.sqrt(sum((a - b) ** 2 for a, b in pairs) / sum(b * b for _, b in pairs))
    pairs = list(zip(v[1:], ref[1:]))
    chem = [(a, b) for n, a, b in zip(h[1:], v[1:], ref[1:]) if n.startswith(CHEMISTRY)]
    groups = {}
    for name, a, b in zip(h[1:], v[1:], ref[1:]):
        if name.startswith(CHEMISTRY):
            groups.setdefault(name.split("[")[0], []).append((a, b))
    # Per species: largest |difference| over the cells / largest |reference| value; species
    # the run has all but used up (largest value below 1e-10 ppb, e.g. ISOP) are left out.
    worst = max((max(abs(a - b) for a, b in g) / max(abs(b) for _, b in g), s)
                for s, g in groups.items() if max(abs(b) for _, b in g) > 1e-10)
    return rel(pairs), rel(chem) if chem else float("nan"), worst


def report(run, reference, d):
    path = lambda n: os.path.join(d, f"{n}.csv")
    if not (os.path.exists(path(run)) and os.path.exists(path(reference))):
        return
    l2, chem, (mx, species) = differences(path(run), path(reference))
    print(f"{run} vs {reference}: relative L2 {l2:.3g} (all columns), {chem:.3g} ({CHEMISTRY}* only); "
          f"worst species max|diff|/max|ref| {mx:.3g} ({species})")


CHEMISTRY = "SuperFast."
d = sys.argv[1]
for run in ["lie300", "lie150", "strang300"]:
    report(run, "ref", d)
for run in ["lie300", "lie150", "strang300", "ref"]:
    report(run, "mono", d)
report("mono6", "mono", d)
report("mono5", "rodas5", d)
