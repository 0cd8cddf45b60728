"""Stochastic models from Python: one path (Model.simulate) and ensembles (Model.ensemble), the
command line's CSV bit for bit, and the Ornstein-Uhlenbeck process's known mean and variance."""
import math

import numpy as np
import pytest

from conftest import OZONE, SOURCE, read_csv, run_cli

OU = SOURCE / "tests" / "exec" / "stochastic" / "ou.esm"
GBM = SOURCE / "tests" / "exec" / "stochastic" / "gbm_sampled.esm"


def test_one_path_is_the_command_lines(esi, tmp_path):
    out = tmp_path / "path.csv"
    run_cli("simulate", OU, "--tspan", 0, 2, "--saveat", 0.25, "--seed", 7, "--output", out, "--quiet")
    cli = read_csv(out)
    ds = esi.load(OU).simulate((0, 2), saveat=0.25, seed=7)
    assert list(ds["time"].values) == cli["t"]
    assert list(ds["OU_x"].values) == cli["OU.x"]
    assert list(ds["OU_y"].values) == cli["OU.y"]
    assert ds.attrs["esi_kind"] == "sde"
    other = esi.load(OU).simulate((0, 2), saveat=0.25, seed=8)
    assert list(other["OU_x"].values) != cli["OU.x"]  # the seed keys the noise


@pytest.mark.parametrize("model,method", [(OU, "Milstein"), (GBM, "auto")])
def test_ensemble_statistics_and_members_are_the_command_lines(esi, tmp_path, model, method):
    stats_csv, members_csv = tmp_path / "stats.csv", tmp_path / "members.csv"
    args = ["simulate", model, "--tspan", 0, 1, "--saveat", 0.5, "--seed", 3, "--ensemble", 40, "--quiet"]
    if method != "auto":
        args += ["--method", method]
    run_cli(*args, "--output", stats_csv)
    run_cli(*args, "--members", "--output", members_csv)
    m = esi.load(model)
    ds = m.ensemble(40, (0, 1), saveat=0.5, seed=3, method=method, threads=2)
    cli = read_csv(stats_csv)
    name = "OU.x" if model == OU else "G.S"
    var = name.replace(".", "_")
    assert list(ds["statistic"].values) == ["mean", "variance"]
    assert list(ds[var].sel(statistic="mean").values) == cli[name + ".mean"]
    assert list(ds[var].sel(statistic="variance").values) == cli[name + ".var"]
    members = m.ensemble(40, (0, 1), saveat=0.5, seed=3, method=method, keep_members=True)
    rows = read_csv(members_csv)
    assert members[var].dims[0] == "member" and members.sizes["member"] == 40
    assert list(members[var].values.reshape(-1)) == rows[name]


def test_the_ornstein_uhlenbeck_moments(esi):
    # x(t) has mean mu + (x0 - mu) e^(-theta t) and variance sigma^2/(2 theta) (1 - e^(-2 theta t)).
    ds = esi.load(OU).ensemble(4000, (0, 1), saveat=1, seed=11, method="SRA1", dt=1e-3, threads=2)
    theta, mu, sigma, x0, t = 2.0, 0.5, 0.6, 1.0, 1.0
    mean = mu + (x0 - mu) * math.exp(-theta * t)
    var = sigma**2 / (2 * theta) * (1 - math.exp(-2 * theta * t))
    got_mean = float(ds["OU_x"].sel(statistic="mean").values[-1])
    got_var = float(ds["OU_x"].sel(statistic="variance").values[-1])
    # 4000 members: the sample mean's standard error is sqrt(var / 4000) ~ 0.0065.
    assert abs(got_mean - mean) < 4 * math.sqrt(var / 4000)
    assert got_var == pytest.approx(var, rel=0.1)


def test_bad_stochastic_requests_raise_with_codes(esi):
    with pytest.raises(esi.EsmError) as caught:
        esi.load(OZONE).ensemble(10, (0, 60))
    assert caught.value.code == "not_stochastic"
    with pytest.raises(esi.EsmError) as caught:
        esi.load(OU).simulate((0, 1), method="Rodas5P")
    assert caught.value.code == "invalid_method"
    with pytest.raises(esi.EsmError) as caught:
        esi.load(OZONE).simulate((0, 60), method="Milstein")
    assert caught.value.code == "invalid_method"
    with pytest.raises(esi.EsmError) as caught:
        esi.load(OU).ensemble(0, (0, 1))
    assert caught.value.code == "invalid_ensemble"
