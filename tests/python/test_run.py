"""esi.run against `esi run`: the plume example (NetCDF winds in, transport and lane-pool
chemistry Strang-split) written by both, compared value for value; a configuration given as a
dict; the progress callback; errors."""
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import SOURCE, run_cli

xr = pytest.importorskip("xarray")
pytest.importorskip("netCDF4")


@pytest.fixture(scope="module")
def plume(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plume")
    for name in ("plume_3d.esm", "plume_3d.run.json", "make_winds.py"):
        shutil.copy(SOURCE / "examples" / "plume" / name, folder / name)
    subprocess.run([sys.executable, str(folder / "make_winds.py"), str(folder / "plume_winds.nc")], check=True,
                   capture_output=True)
    run_cli("run", folder / "plume_3d.esm", "--config", folder / "plume_3d.run.json", "--output",
            folder / "cli.nc", "--quiet")
    return folder


def assert_same_values(a, b):
    assert list(a.data_vars) == list(b.data_vars)
    for name in list(a.data_vars) + list(a.coords):
        assert a[name].dims == b[name].dims, name
        assert np.array_equal(a[name].values, b[name].values, equal_nan=True), name


def test_a_run_writes_what_esi_run_writes(esi, plume):
    out = esi.run(esi.load(plume / "plume_3d.esm"), plume / "plume_3d.run.json", output=plume / "py.nc")
    assert out == str(plume / "py.nc")
    with xr.open_dataset(plume / "cli.nc", decode_times=False) as a, xr.open_dataset(out, decode_times=False) as b:
        assert_same_values(a, b)
        assert b.attrs["esi_return_code"] == "Success"


def test_a_dict_configuration_and_a_dataset_back(esi, plume, monkeypatch):
    config = json.loads((plume / "plume_3d.run.json").read_text())
    monkeypatch.chdir(plume)  # the dict's relative paths (model, winds) resolve here
    seen = []
    ds = esi.run(None, config, threads=1, progress=lambda t, f: seen.append((t, f)))
    with xr.open_dataset(plume / "cli.nc", decode_times=False) as a:
        assert_same_values(a, ds)  # one thread or two: the same bits
    assert seen and seen[-1][1] == pytest.approx(1.0)
    assert all(x[0] <= y[0] for x, y in zip(seen, seen[1:]))


def test_an_exception_in_the_progress_callback_stops_the_run(esi, plume):
    def stop(t, fraction):
        raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        esi.run(plume / "plume_3d.esm", plume / "plume_3d.run.json", output=plume / "stopped.nc", progress=stop)
    with xr.open_dataset(plume / "stopped.nc", decode_times=False) as f:  # the records reached, renamed into place
        assert 0 < f.sizes["time"] < 25


def test_run_errors_raise_with_codes(esi, plume, tmp_path):
    bad = tmp_path / "bad.run.json"
    bad.write_text('{"esm_integrator": "0.1", "time": {"start": 0, "stop": 1}, "nonsense": 1}')
    with pytest.raises(esi.EsmError) as caught:
        esi.run(plume / "plume_3d.esm", bad, output=tmp_path / "x.nc")
    assert caught.value.code.startswith("run_config")
    assert not (tmp_path / "x.nc").exists()
    with pytest.raises(esi.EsmError) as caught:
        esi.run(plume / "plume_3d.esm", plume / "plume_3d.run.json", output=tmp_path / "x.txt")
    assert caught.value.code == "unsupported_output"
