#!/usr/bin/env python3
"""Differences of each run's final state from the references (make_case.py's runs).

usage: compare.py DIR   (reads DIR/{lie300,lie150,strang300,ref,mono}.csv and, when present,
                         DIR/{mono30,rodas30}.csv)

For each pair: the relative L2 difference over every column but time, the worst species'
relative L2 difference (columns grouped by the name before '['), and the largest absolute
difference divided by the largest absolute reference value of that species.
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
    assert h == names, f"{run} and {reference} have different columns"
    num = sum((a - b) ** 2 for a, b in zip(v[1:], ref[1:]))
    den = sum(b * b for b in ref[1:])
    groups = {}
    for name, a, b in zip(h[1:], v[1:], ref[1:]):
        g = groups.setdefault(name.split("[")[0], [0.0, 0.0, 0.0, 0.0])
        g[0] += (a - b) ** 2
        g[1] += b * b
        g[2] = max(g[2], abs(a - b))
        g[3] = max(g[3], abs(b))
    worst_l2 = max((math.sqrt(g[0] / g[1]), s) for s, g in groups.items() if g[1] > 0)
    worst_max = max((g[2] / g[3], s) for s, g in groups.items() if g[3] > 0)
    return math.sqrt(num / den), worst_l2, worst_max


def report(run, reference, d):
    path = lambda n: os.path.join(d, f"{n}.csv")
    if not (os.path.exists(path(run)) and os.path.exists(path(reference))):
        return
    l2, (sl2, s1), (mx, s2) = differences(path(run), path(reference))
    print(f"{run} vs {reference}: relative L2 {l2:.3g}; worst species L2 {sl2:.3g} ({s1}); "
          f"worst species max |diff| / max |ref| {mx:.3g} ({s2})")


d = sys.argv[1]
for run in ["lie300", "lie150", "strang300"]:
    report(run, "ref", d)
for run in ["lie300", "lie150", "strang300", "ref"]:
    report(run, "mono", d)
report("mono30", "rodas30", d)
