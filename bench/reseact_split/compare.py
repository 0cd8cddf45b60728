#!/usr/bin/env python3
"""Relative L2 difference of each run's final state from the reference (make_case.py's runs).

usage: compare.py DIR   (reads DIR/{lie300,lie150,strang300,ref}.csv)
"""
import csv
import math
import sys


def final(path):
    rows = list(csv.reader(open(path)))
    return rows[0], [float(x) for x in rows[-1]]


names, ref = final(f"{sys.argv[1]}/ref.csv")
for run in ["lie300", "lie150", "strang300"]:
    h, v = final(f"{sys.argv[1]}/{run}.csv")
    assert h == names
    num = sum((a - b) ** 2 for a, b in zip(v[1:], ref[1:]))
    den = sum(b * b for b in ref[1:])
    print(f"{run}: relative L2 difference from the reference {math.sqrt(num / den):.3g}")
