#!/usr/bin/env python3
"""The Python module's costs (issue 34), each against a peer measured in the same run:

  call overhead   Model.simulate of a tiny model (ROBER, 10 s) against `esi simulate` of the same
                  run timed inside the CLI (--stats wall_seconds) and against the C++ core call
                  alone (esi._core.simulate, no xarray): what the module adds per call
  sweep           10^4 SuperFast members (T and jNO2 on a grid) for 1 h: Model.sweep on THREADS
                  threads against a Python loop of Model.simulate calls (the first LOOP members,
                  scaled to 10^4) and against `esi simulate --params TABLE --sweep` (wall time of
                  the whole command, load and CSV writing included, and its own wall_seconds);
                  both engines (scalar: each member bit for bit its simulate call; lanes: the
                  members as cells of lane pools), with the lane engine's largest deviation
                  from the scalar one

    PYTHONPATH=build/python python3 bench/bench_python.py [--members 10000] [--loop 1000] [--threads 2]

Targets: the module's sweep within 5 % of the CLI's sweep, and >= 20x faster than the loop.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = pathlib.Path(os.environ.get("ESI_CORPUS", ROOT.parent / "shared" / "corpus"))
SUPERFAST = CORPUS / "EarthSciModels" / "components" / "gaschem" / "superfast.esm"
ROBER = ROOT / "tests" / "problems" / "rober.esm"


def best(f, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=10000)
    ap.add_argument("--loop", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--esi", default=str(ROOT / "build" / "esi"))
    a = ap.parse_args()
    import esi

    print(f"bench_python: {time.strftime('%Y-%m-%d %H:%M:%S')}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, esi module {esi.__file__}")

    # Call overhead on a tiny model.
    rober = esi.load(ROBER)
    r = esi._request(0.0, 10.0, 1.0, "Rodas5P", 1e-6, 1e-10, None, None, 1, None, False)
    rober.simulate((0, 10), saveat=1, method="Rodas5P", atol=1e-10)  # warm (imports xarray)
    n = 200
    module = best(lambda: [rober.simulate((0, 10), saveat=1, method="Rodas5P", atol=1e-10) for _ in range(n)], 3) / n
    core = best(lambda: [esi._core.simulate(rober._document, r) for _ in range(n)], 3) / n
    with tempfile.TemporaryDirectory() as tmp:
        stats = pathlib.Path(tmp) / "s.json"
        cli_inside = []
        for _ in range(20):
            subprocess.run([a.esi, "simulate", str(ROBER), "--tspan", "0", "10", "--saveat", "1", "--method",
                            "Rodas5P", "--atol", "1e-10", "--output", str(pathlib.Path(tmp) / "o.csv"),
                            "--stats", str(stats), "--quiet"], check=True)
            cli_inside.append(json.loads(stats.read_text())["wall_seconds"])
    print(f"call overhead (ROBER 0-10 s, Rodas5P): Model.simulate {module * 1e3:.3f} ms, core call "
          f"{core * 1e3:.3f} ms, esi simulate's own run {min(cli_inside) * 1e3:.3f} ms; the dataset adds "
          f"{(module - core) * 1e3:.3f} ms")

    # The sweep.
    sf = esi.load(SUPERFAST)
    side = int(np.ceil(np.sqrt(a.members)))
    T, J = np.meshgrid(np.linspace(260.0, 310.0, side), np.linspace(0.002, 0.02, side))
    table = {"T": T.ravel()[: a.members], "jNO2": J.ravel()[: a.members]}
    kw = dict(saveat=600.0, method="Rodas3", rtol=1e-4, atol=1e-3)
    start = time.perf_counter()
    for i in range(a.loop):
        sf.simulate((0, 3600), set={"T": table["T"][i], "jNO2": table["jNO2"][i]}, **kw)
    loop = (time.perf_counter() - start) * a.members / a.loop
    print(f"sweep of {a.members} SuperFast members, 1 h, Rodas3, {a.threads} threads; a loop of simulate calls "
          f"{loop:.3f} s (the first {a.loop} members, scaled)")
    reference = None
    for engine in ("scalar", "lanes"):
        start = time.perf_counter()
        ds = sf.sweep(table, (0, 3600), threads=a.threads, engine=engine, **kw)
        module_sweep = time.perf_counter() - start
        assert (ds["return_code"].values == "Success").all()
        deviation = ""
        if reference is None:
            reference = ds
        else:
            # In units of the error test's weight, atol + rtol |x|: what each engine may be off by.
            worst, where = 0.0, ""
            for name in reference.data_vars:
                if name == "return_code":
                    continue
                ref = reference[name].values
                units = float(np.max(np.abs(ds[name].values - ref) / (kw["atol"] + kw["rtol"] * np.abs(ref))))
                if units > worst:
                    worst, where = units, name
            deviation = f"; largest difference from the scalar engine {worst:.2f} x (atol + rtol |x|) ({where})"
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "table.csv"
            path.write_text("T,jNO2\n" + "".join(f"{x!r},{y!r}\n" for x, y in zip(table["T"], table["jNO2"])))
            stats = pathlib.Path(tmp) / "s.json"
            start = time.perf_counter()
            subprocess.run([a.esi, "simulate", str(SUPERFAST), "--tspan", "0", "3600", "--saveat", "600", "--method",
                            "Rodas3", "--rtol", "1e-4", "--atol", "1e-3", "--params", str(path), "--sweep",
                            "--sweep-engine", engine, "--threads", str(a.threads), "--output",
                            str(pathlib.Path(tmp) / "o.csv"), "--stats", str(stats), "--quiet"], check=True)
            cli_whole = time.perf_counter() - start
            cli_sweep = json.loads(stats.read_text())["wall_seconds"]
        print(f"  engine {engine:6s}: Model.sweep {module_sweep:7.3f} s, esi simulate --sweep {cli_sweep:7.3f} s inside "
              f"({cli_whole:.3f} s whole command); module / CLI {module_sweep / cli_sweep:.3f} (target <= 1.05), "
              f"loop / module {loop / module_sweep:.1f}x (target >= 20x){deviation}")


if __name__ == "__main__":
    main()
