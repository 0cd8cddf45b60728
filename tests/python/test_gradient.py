"""Model.gradient: the command line's --gradient numbers bit for bit, and an analytic oracle."""
import json
import math

import pytest

from conftest import OZONE, run_cli, write_model


def test_the_gradient_is_the_command_lines(esi, tmp_path):
    out = tmp_path / "grad.json"
    run_cli("simulate", OZONE, "--tspan", 0, 3600, "--method", "Rodas5P", "--loss", "OzoneNOx.O3",
            "--gradient", out, "--quiet")
    cli = json.loads(out.read_text())
    g = esi.load(OZONE).gradient("OzoneNOx.O3", (0, 3600), method="Rodas5P")
    assert g["loss"] == cli["loss"]
    assert g["gradient"] == cli["gradient"]
    assert g["units"] == cli["units"]


def test_exponential_decay_against_its_closed_form(esi, tmp_path):
    # x' = -k x, x(0) = 2: x(T) = 2 exp(-k T); dx(T)/dk = -2 T exp(-k T), dx(T)/dx0 = exp(-k T).
    path = write_model(tmp_path / "decay.esm", {"x": {"op": "*", "args": [{"op": "-", "args": ["k"]}, "x"]}},
                       {"x": ("unknown", 2.0, "1"), "k": ("parameter", 0.3, "1/s")})
    g = esi.load(path).gradient("Box.x", (0, 4), method="Rodas5P", rtol=1e-10, atol=1e-12)
    e = math.exp(-0.3 * 4)
    assert g["loss"] == pytest.approx(2 * e, rel=1e-8)
    assert g["gradient"]["Box.k"] == pytest.approx(-2 * 4 * e, rel=1e-7)
    assert g["gradient"]["Box.x"] == pytest.approx(e, rel=1e-7)
    assert g["initial"] == ["Box.x"]
    only = esi.load(path).gradient("Box.x", (0, 4), wrt=["k"], method="Rodas5P", rtol=1e-10, atol=1e-12)
    assert list(only["gradient"]) == ["Box.k"]


def test_a_loss_naming_nothing_is_refused(esi):
    with pytest.raises(esi.EsmError) as caught:
        esi.load(OZONE).gradient("OzoneNOx.nothing", (0, 60))
    assert caught.value.code


def test_a_loss_of_terms_is_the_command_lines(esi, tmp_path, monkeypatch):
    (tmp_path / "obs.csv").write_text("time,name,value,sigma\n600,OzoneNOx.O3,1e-3,1e-4\n1800,OzoneNOx.O3,1.2e-3,1e-4\n")
    loss = {"terms": [{"variable": "OzoneNOx.NO2", "integral": [0, 3600]},
                      {"variable": "OzoneNOx.O3", "at": [1200, 3600], "weight": 0.5},
                      {"observations": "obs.csv", "weight": 2}]}
    (tmp_path / "loss.json").write_text(json.dumps(loss))
    out = tmp_path / "grad.json"
    run_cli("simulate", OZONE, "--tspan", 0, 3600, "--method", "Rodas5P", "--loss-file", tmp_path / "loss.json",
            "--gradient", out, "--quiet")
    cli = json.loads(out.read_text())
    model = esi.load(OZONE)
    by_path = model.gradient(tmp_path / "loss.json", (0, 3600), method="Rodas5P")
    assert by_path["loss"] == cli["loss"] and by_path["gradient"] == cli["gradient"]
    monkeypatch.chdir(tmp_path)  # a dict's observation files are read from the current folder
    by_dict = model.gradient(loss, (0, 3600), method="Rodas5P")
    assert by_dict["loss"] == cli["loss"] and by_dict["gradient"] == cli["gradient"]
    with pytest.raises(esi.EsmError) as caught:
        model.gradient({"terms": [{"variable": "OzoneNOx.O3"}]}, (0, 3600))
    assert caught.value.code == "invalid_loss_file"
