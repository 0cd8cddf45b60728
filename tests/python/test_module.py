"""The Python module against the esi command: the same numbers bit for bit, the same variables,
dimensions and attributes as the NetCDF output, every error path as an exception with its code,
and the GIL released while a run computes."""
import math
import os
import re
import signal
import threading
import time

import numpy as np
import pytest

from conftest import COLUMN, ESI, OZONE, read_csv, run_cli, write_model


def cell_value(ds, flat):
    """The dataset's value series for one CSV column: a scalar's variable, or an array cell
    "A.x[i,j]" read at [..., j-1, i-1] of the array's variable (axes reversed)."""
    by_flat = {v.attrs["esm_name"]: v for v in ds.data_vars.values()}
    if flat in by_flat:
        return by_flat[flat].values
    m = re.fullmatch(r"(.*)\[([0-9,]+)\]", flat)
    assert m, f"{flat} is neither a variable nor an array cell"
    index = [int(i) - 1 for i in m.group(2).split(",")]
    return by_flat[m.group(1)].values[(slice(None), *reversed(index))]


def assert_same_as_csv(ds, csv):
    np.testing.assert_array_equal(ds["time"].values, np.array(csv.pop("t")))
    for flat, column in csv.items():
        got = cell_value(ds, flat)
        assert np.array_equal(got, np.array(column)), f"{flat} differs from the CLI's CSV"


def test_scalar_model_equals_the_cli_bit_for_bit(esi, tmp_path):
    out = tmp_path / "ozone.csv"
    run_cli("simulate", OZONE, "--tspan", 0, 21600, "--saveat", 600, "--output", out, "--quiet")
    ds = esi.load(OZONE).simulate((0, 21600), saveat=600)
    assert_same_as_csv(ds, read_csv(out))
    assert ds.attrs["esi_return_code"] == "Success"


def test_defaults_and_overrides_follow_the_cli(esi, tmp_path):
    """No saveat (a hundredth of the span), default tolerances, a method, --set on a parameter
    and on a state's initial value by local name."""
    out = tmp_path / "ozone.csv"
    run_cli("simulate", OZONE, "--tspan", 0, 3600, "--method", "Rodas3", "--rtol", "1e-8",
            "--set", "jNO2=0.004", "--set", "O3=8e11", "--output", out, "--quiet")
    ds = esi.load(OZONE).simulate((0, 3600), method="Rodas3", rtol=1e-8, set={"jNO2": 0.004, "O3": 8e11})
    assert ds.sizes["time"] == 101
    assert ds.attrs["esi_method"] == "Rodas3"
    assert_same_as_csv(ds, read_csv(out))


def test_gridded_model_on_lane_pools_equals_the_cli(esi, tmp_path):
    out = tmp_path / "column.csv"
    run_cli("simulate", COLUMN, "--method", "Rodas3", "--threads", 2, "--tspan", 0, 1800, "--saveat", 600,
            "--output", out, "--quiet")
    ds = esi.load(COLUMN).simulate((0, 1800), saveat=600, method="Rodas3", threads=2)
    assert_same_as_csv(ds, read_csv(out))
    # and on one thread: the same bits
    one = esi.load(COLUMN).simulate((0, 1800), saveat=600, method="Rodas3", threads=1)
    for name in ds.data_vars:
        assert np.array_equal(ds[name].values, one[name].values, equal_nan=True), name


def test_layout_is_the_netcdf_files(esi, tmp_path):
    """Variables, dimensions, coordinates and attributes as `esi simulate --output X.nc` writes."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("netCDF4")
    out = tmp_path / "column.nc"
    run_cli("simulate", COLUMN, "--method", "Rodas3", "--tspan", 0, 1200, "--saveat", 600, "--output", out, "--quiet")
    ds = esi.load(COLUMN).simulate((0, 1200), saveat=600, method="Rodas3")
    with xr.open_dataset(out, decode_times=False, mask_and_scale=False) as f:
        assert list(f.data_vars) == list(ds.data_vars)
        assert set(f.coords) == set(ds.coords)
        for name in list(f.data_vars) + list(f.coords):
            a, b = f[name], ds[name]
            assert a.dims == b.dims, name
            assert np.array_equal(a.values, b.values, equal_nan=True), name
            attrs = {k: v for k, v in a.attrs.items() if k != "_FillValue"}
            assert attrs == b.attrs, name
    assert any(len(v.dims) > 1 for v in ds.data_vars.values()), "the column has array variables"


def test_model_describes_its_variables(esi):
    m = esi.load(OZONE)
    assert "OzoneNOx.O3" in m.states and m.states["OzoneNOx.O3"].units == "molec/cm^3"
    assert m.parameters["OzoneNOx.jNO2"].default == 8.0e-3  # as examples/ozone_box.esm declares it
    assert "Diagnostics.O3_ppb" in m.observed
    assert len(m.reactions) == 7
    assert any("O3" in str(r) for r in m.reactions)


def test_validate_lists_findings(esi, tmp_path):
    assert esi.validate(OZONE) == []
    bad = tmp_path / "bad.esm"
    bad.write_text('{"esm": "1.0.0", "models": {"A": {"variables": {"x": {"type": "unknown"}}, '
                   '"equations": [{"lhs": {"op": "D", "args": ["x"], "wrt": "t"}, "rhs": "y"}]}}}')
    findings = esi.validate(bad)
    assert findings and all(f.severity in ("error", "note") for f in findings)
    assert any(f.severity == "error" for f in findings)
    assert all(f.file for f in findings)
    cli = run_cli("validate", bad, check=False)
    for f in findings:
        if f.severity == "error":
            assert f"[{f.code}]" in cli.stdout + cli.stderr


@pytest.mark.parametrize("call, code", [
    (lambda esi, m, p: esi.load(p / "missing.esm"), None),
    (lambda esi, m, p: m.simulate((0, 10), set={"no_such_name": 1}), "unknown_override"),
    (lambda esi, m, p: m.simulate((0, 10), set={"O3_ppb": 1}), "unknown_override"),  # an observed
    (lambda esi, m, p: m.simulate((0, 10), method="Euler4"), "unknown_method"),
    (lambda esi, m, p: m.simulate((10, 0)), "invalid_time_span"),
    (lambda esi, m, p: m.simulate((0, 10), saveat=-1), "invalid_saveat"),
    (lambda esi, m, p: m.simulate((0, 10), rtol=-1), "invalid_tolerance"),
    (lambda esi, m, p: m.simulate((0, 10), component="NoSuchComponent"), None),
    (lambda esi, m, p: m.simulate((0, 10), inputs=[1, 2]), "invalid_inputs"),
])
def test_every_error_raises_with_its_code(esi, tmp_path, call, code):
    m = esi.load(OZONE)
    with pytest.raises(esi.EsmError) as caught:
        call(esi, m, tmp_path)
    e = caught.value
    assert e.code and e.message
    if code is not None:
        assert e.code == code
    assert isinstance(e.file, str) and isinstance(e.pointer, str)


def test_invalid_document_is_refused_with_its_location(esi, tmp_path):
    bad = tmp_path / "bad.esm"
    bad.write_text('{"esm": "1.0.0", "metadata": {"name": "bad", "authors": ["t"]}, "models": {"A": {"variables": '
                   '{"x": {"type": "unknown", "default": 1}}, "equations": [{"lhs": {"op": "D", "args": ["x"], '
                   '"wrt": "t"}, "rhs": "undefined_y"}]}}}')
    with pytest.raises(esi.EsmError) as caught:
        esi.load(bad)
    assert caught.value.file.endswith("bad.esm")
    assert caught.value.pointer.startswith("/models/A")


def test_a_failed_solve_raises_with_what_it_reached(esi, tmp_path):
    # x' = x^2 from x = 1 blows up at t = 1.
    path = write_model(tmp_path / "blowup.esm", {"x": {"op": "^", "args": ["x", 2]}},
                       {"x": ("unknown", 1.0, "1")})
    with pytest.raises(esi.SolveError) as caught:
        esi.load(path).simulate((0, 2), saveat=0.1, method="Tsit5", atol=1e-8)
    e = caught.value
    assert e.return_code in ("DtBelowMin", "NonFinite", "MaxSteps")
    ds = e.dataset
    assert 0 < ds.sizes["time"] and ds["time"].values[-1] < 2.0  # it ends where the run stopped
    cli = run_cli("simulate", path, "--tspan", 0, 2, "--saveat", 0.1, "--method", "Tsit5", "--atol", "1e-8",
                  "--output", tmp_path / "b.csv", "--quiet", check=False)
    assert cli.returncode != 0
    assert_same_as_csv(ds, read_csv(tmp_path / "b.csv"))


def long_model(tmp_path):
    """An oscillator run long at a tight tolerance: seconds of stepping."""
    return write_model(tmp_path / "oscillator.esm",
                       {"x": "v", "v": {"op": "-", "args": ["x"]}},
                       {"x": ("unknown", 1.0, "1"), "v": ("unknown", 0.0, "1/s")})


def test_the_gil_is_released_while_a_run_computes(esi, tmp_path):
    """Two threads simulating at once: the second starts (in Python) before the first ends, which
    a run holding the GIL would not allow; and the main thread keeps running Python meanwhile."""
    m = esi.load(long_model(tmp_path))
    spans = {}

    def run(key):
        start = time.monotonic()
        m.simulate((0, 1e4), method="Tsit5", rtol=1e-12, atol=1e-12)
        spans[key] = (start, time.monotonic())

    a = threading.Thread(target=run, args=("a",))
    a.start()
    time.sleep(0.05)
    b = threading.Thread(target=run, args=("b",))
    b.start()
    ticks = 0
    while a.is_alive():
        ticks += 1
        time.sleep(0.001)
    a.join()
    b.join()
    assert spans["b"][0] < spans["a"][1], "the second run could only start after the first ended"
    assert ticks > 10, "the main thread did not run while the simulation computed"


def test_ctrl_c_stops_a_run(esi, tmp_path):
    """A SIGINT during a run ends it after the step in progress with KeyboardInterrupt raised from
    the run itself (not at the next Python line after a finished run)."""
    m = esi.load(long_model(tmp_path))
    timer = threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt) as caught:
        m.simulate((0, 1.5e4), method="Tsit5", rtol=1e-12, atol=1e-12)
    timer.join()
    innermost = caught.traceback[-1]
    assert "_core.simulate" in str(innermost.statement), str(innermost.statement)
