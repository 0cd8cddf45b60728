"""`cmake --install` into a fresh prefix, then `import esi` from another folder with that prefix's
site directory on the path: the installed module runs a model and finds the installed schema."""
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import OZONE


def test_installed_module_imports_and_runs_elsewhere(tmp_path):
    build = os.environ.get("ESI_BUILD_DIR")
    if not build:
        pytest.skip("ESI_BUILD_DIR is not set (ctest sets it)")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)], check=True, capture_output=True)
    site = [p for p in prefix.rglob("esi/__init__.py") if "dist-packages" in str(p) or "site-packages" in str(p)]
    assert len(site) == 1, site
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ESI_SCHEMA")}
    env["PYTHONPATH"] = str(site[0].parent.parent)
    code = ("import esi, os; ds = esi.load(%r).simulate((0, 600)); "
            "print(esi.__file__); print(os.environ['ESI_SCHEMA']); print(ds.sizes['time'])" % str(OZONE))
    out = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, check=True,
                         capture_output=True, text=True).stdout.split("\n")
    assert out[0].startswith(str(prefix)), out[0]
    assert pathlib.Path(out[1]).is_file() and out[1].startswith(str(prefix)), out[1]
    assert out[2] == "101"
