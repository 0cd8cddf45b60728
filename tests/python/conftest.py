"""Shared fixtures of the Python module's tests (ctest runs them with PYTHONPATH=<build>/python,
ESI_BINARY the esi command of the same build, ESI_SOURCE_DIR this repository)."""
import json
import os
import pathlib
import subprocess

import pytest

SOURCE = pathlib.Path(os.environ.get("ESI_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
ESI = os.environ.get("ESI_BINARY", str(SOURCE / "build" / "esi"))
OZONE = SOURCE / "examples" / "ozone_box.esm"
COLUMN = SOURCE / "examples" / "superfast_column.esm"


def run_cli(*args, check=True):
    """The esi command with these arguments; its CompletedProcess."""
    return subprocess.run([ESI, *map(str, args)], capture_output=True, text=True, check=check)


def read_csv(path):
    """An `esi simulate` CSV as {column: [float, ...]} (shortest round-trip text: float() is exact)."""
    import csv
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    return {name: [float(r[j]) for r in rows[1:]] for j, name in enumerate(header)}


def write_model(path, equations, variables, name="Box"):
    """A small one-component document: `variables` {name: (type, default, units)}, `equations`
    {state: rhs expression (ESM JSON)}."""
    doc = {
        "esm": "1.0.0",
        "metadata": {"name": name, "authors": ["esi tests"], "description": "a test model"},
        "models": {name: {
            "variables": {k: {"type": t, "default": d, "units": u} for k, (t, d, u) in variables.items()},
            "equations": [{"lhs": {"op": "D", "args": [s], "wrt": "t"}, "rhs": rhs}
                          for s, rhs in equations.items()],
        }},
    }
    pathlib.Path(path).write_text(json.dumps(doc, indent=1))
    return path


@pytest.fixture(scope="session")
def esi():
    import esi as module
    return module
