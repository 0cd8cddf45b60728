"""Model.sweep and `esi simulate --params TABLE --sweep`: each member bit for bit the run a
separate simulate call with that row's values gives, for any thread count and table order."""
import numpy as np
import pytest

from conftest import COLUMN, OZONE, read_csv, run_cli


def table(n=6):
    return {"jNO2": np.linspace(0.004, 0.01, n), "O3": np.linspace(5e11, 1.5e12, n)}


def test_every_member_equals_its_own_simulate_call(esi):
    m = esi.load(OZONE)
    tab = table()
    ds = m.sweep(tab, (0, 21600), saveat=1800, threads=2, set={"k_OH_CO": 2.5e-13})
    assert ds.sizes["member"] == 6
    assert list(ds["return_code"].values) == ["Success"] * 6
    np.testing.assert_array_equal(ds["OzoneNOx_jNO2"].values, tab["jNO2"])
    np.testing.assert_array_equal(ds["initial_OzoneNOx_O3"].values, tab["O3"])
    for i in range(6):
        one = m.simulate((0, 21600), saveat=1800, set={"k_OH_CO": 2.5e-13, "jNO2": tab["jNO2"][i], "O3": tab["O3"][i]})
        for name in one.data_vars:
            assert np.array_equal(ds[name].values[i], one[name].values), (i, name)


def test_threads_and_order_do_not_change_the_bits(esi):
    m = esi.load(OZONE)
    tab = table(7)
    one = m.sweep(tab, (0, 7200), method="Rodas3", threads=1)
    two = m.sweep(tab, (0, 7200), method="Rodas3", threads=2)
    reversed_tab = {k: v[::-1] for k, v in tab.items()}
    back = m.sweep(reversed_tab, (0, 7200), method="Rodas3", threads=2)
    for name in one.data_vars:
        if name == "return_code":
            continue
        assert np.array_equal(one[name].values, two[name].values), name
        assert np.array_equal(one[name].values, back[name].values[::-1]), name


def test_the_command_line_sweep_writes_the_same_numbers(esi, tmp_path):
    tab = table(4)
    path = tmp_path / "table.csv"
    path.write_text("# the sweep's members\njNO2,O3\n" +
                    "".join(f"{a!r},{b!r}\n" for a, b in zip(tab["jNO2"], tab["O3"])))
    out = tmp_path / "sweep.csv"
    run_cli("simulate", OZONE, "--tspan", 0, 7200, "--saveat", 900, "--params", path, "--sweep",
            "--threads", 2, "--output", out, "--quiet")
    csv = read_csv(out)
    ds = esi.load(OZONE).sweep(tab, (0, 7200), saveat=900)
    member = np.array(csv.pop("member"))
    times = np.array(csv.pop("t"))
    by_flat = {v.attrs["esm_name"]: v for v in ds.data_vars.values() if "esm_name" in v.attrs}
    assert set(csv) == set(by_flat)
    for i in range(4):
        rows = member == i
        np.testing.assert_array_equal(times[rows], ds["time"].values)
        for flat, column in csv.items():
            assert np.array_equal(np.array(column)[rows], by_flat[flat].values[i]), (i, flat)


def test_a_json_table_is_read_too(tmp_path):
    import json
    tab = {"jNO2": [0.004, 0.006], "O3": [8e11, 9e11]}
    (tmp_path / "t.json").write_text(json.dumps(tab))
    (tmp_path / "t.csv").write_text("jNO2,O3\n0.004,8e11\n0.006,9e11\n")
    for name in ("t.json", "t.csv"):
        run_cli("simulate", OZONE, "--tspan", 0, 600, "--params", tmp_path / name, "--sweep",
                "--output", tmp_path / (name + ".out.csv"), "--quiet")
    assert (tmp_path / "t.json.out.csv").read_text() == (tmp_path / "t.csv.out.csv").read_text()


@pytest.mark.parametrize("text, fragment", [
    ("jNO2,O3\n0.004\n", "1 values for 2 columns"),
    ("jNO2,jNO2\n1,2\n", "names two columns"),
    ("jNO2\nabc\n", "is not a finite number"),
    ("jNO2\n", "at least one row"),
])
def test_a_bad_table_is_refused_at_its_line(tmp_path, text, fragment):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    r = run_cli("simulate", OZONE, "--tspan", 0, 600, "--params", path, "--sweep", "--output",
                tmp_path / "o.csv", check=False)
    assert r.returncode == 1
    assert "invalid_params" in r.stderr and fragment in r.stderr and str(path) in r.stderr
    assert not (tmp_path / "o.csv").exists()


def test_sweep_errors_raise_with_codes(esi):
    m = esi.load(OZONE)
    with pytest.raises(esi.EsmError) as caught:
        m.sweep({"no_such": [1.0, 2.0]}, (0, 60))
    assert caught.value.code == "unknown_override"
    with pytest.raises(esi.EsmError) as caught:
        m.sweep({"jNO2": [1.0, 2.0], "OzoneNOx.jNO2": [1.0, 2.0]}, (0, 60))
    assert caught.value.code == "invalid_sweep"
    with pytest.raises(esi.EsmError) as caught:
        esi.load(COLUMN).sweep({"SuperFast.T": [280.0, 290.0]}, (0, 60), method="Rodas3")
    assert caught.value.code == "sweep_unsupported_model"


def test_the_lane_engine_is_composition_independent_and_agrees_within_tolerance(esi):
    """Members as cells of lane pools: the same bits for any thread count, lane width and place
    in the table; against the scalar engine (separate runs) within what the tolerances allow."""
    m = esi.load(OZONE)
    tab = table(9)
    kw = dict(saveat=1800, method="Rodas3", rtol=1e-6)
    lanes = m.sweep(tab, (0, 21600), engine="lanes", threads=2, lanes=4, **kw)
    alone = m.sweep({k: v[5:6] for k, v in tab.items()}, (0, 21600), engine="lanes", threads=1, lanes=16, **kw)
    scalar = m.sweep(tab, (0, 21600), **kw)
    assert list(lanes["return_code"].values) == ["Success"] * 9
    for name in scalar.data_vars:
        if name == "return_code":
            continue
        assert np.array_equal(lanes[name].values[5], alone[name].values[0]), name
        ref = scalar[name].values
        scale = np.max(np.abs(ref), axis=1, keepdims=True) + 1e-300
        assert np.max(np.abs(lanes[name].values - ref) / scale) < 1e-3, name
    # observeds come from each member's own states and parameters
    ppb = lanes["Diagnostics_O3_ppb"].values
    assert np.allclose(ppb / lanes["OzoneNOx_O3"].values, ppb[0, 0] / lanes["OzoneNOx_O3"].values[0, 0], rtol=1e-12)


def test_the_lane_engine_refuses_what_it_cannot_run(esi, tmp_path):
    m = esi.load(OZONE)
    with pytest.raises(esi.EsmError) as caught:
        m.sweep(table(2), (0, 60), engine="lanes", method="Tsit5")
    assert caught.value.code == "sweep_unsupported_method"
    with pytest.raises(esi.EsmError) as caught:
        m.sweep(table(2), (0, 60), engine="warp")
    assert caught.value.code == "invalid_sweep"
    path = tmp_path / "t.csv"
    path.write_text("jNO2\n0.004\n0.008\n")
    r = run_cli("simulate", OZONE, "--tspan", 0, 600, "--params", path, "--sweep", "--sweep-engine", "lanes",
                "--method", "Rodas5P", "--threads", 2, "--output", tmp_path / "o.csv", "--quiet")
    assert r.returncode == 0
    csv = read_csv(tmp_path / "o.csv")
    ds = m.sweep({"jNO2": [0.004, 0.008]}, (0, 600), engine="lanes", method="Rodas5P")
    member = np.array(csv["member"])
    assert np.array_equal(np.array(csv["OzoneNOx.O3"])[member == 1], ds["OzoneNOx_O3"].values[1])
