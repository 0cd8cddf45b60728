"""Model.analyze: the document's inline analyses as datasets, the same numbers as `esi analyze`'s
CSV files, and with out= the same folder."""
import csv
import json
import os

import numpy as np
import pytest

from conftest import OZONE, read_csv, run_cli


def runs_csv(folder):
    with open(folder / "runs.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_the_sweep_is_the_command_lines(esi, tmp_path):
    run_cli("analyze", OZONE, "--out", tmp_path / "cli", "--jobs", 1, "-q")
    found = esi.load(OZONE).analyze(jobs=2)
    assert list(found) == ["photolysis_sweep"]
    ds = found["photolysis_sweep"]
    folder = tmp_path / "cli" / "photolysis_sweep"
    runs = runs_csv(folder)
    assert ds.sizes["run"] == len(runs) > 1
    swept = [k for k in runs[0] if k not in ("run", "file", "rows", "status")]
    for i, row in enumerate(runs):
        data = read_csv(folder / row["file"])
        assert list(ds["time"].values[: len(data["t"])]) == data["t"]
        for column, values in data.items():
            if column == "t":
                continue
            name = next(v for v in ds.data_vars if ds[v].attrs.get("esm_name") == column)
            assert list(ds[name].values[i]) == values, column
        for p in swept:
            coord = next(c for c in ds.coords if ds[c].attrs.get("esm_name") == p)
            assert float(ds[coord].values[i]) == float(row[p])
        assert ds["return_code"].values[i] == "Success"


def test_out_writes_the_command_lines_folder(esi, tmp_path):
    run_cli("analyze", OZONE, "--out", tmp_path / "cli", "-q")
    found = esi.load(OZONE).analyze(out=tmp_path / "py")
    for name in os.listdir(tmp_path / "cli" / "photolysis_sweep"):
        a = tmp_path / "cli" / "photolysis_sweep" / name
        b = tmp_path / "py" / "photolysis_sweep" / name
        if name == "plots.json":  # names its own folder
            ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
            assert ja["plots"] == jb["plots"]
        elif name.endswith((".csv", ".hash")):
            assert a.read_bytes() == b.read_bytes(), name
        else:
            assert b.exists(), name
    ds = found["photolysis_sweep"]
    assert ds.attrs["esi_folder"] == str(tmp_path / "py" / "photolysis_sweep")
    for image in ds.attrs["esi_images"]:
        assert open(image, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "py" / "index.html").exists()


def test_unknown_analysis_and_a_document_without_any(esi, tmp_path):
    with pytest.raises(esi.EsmError) as caught:
        esi.load(OZONE).analyze(analysis="nope")
    assert caught.value.code == "unknown_analysis"
    from conftest import write_model
    path = write_model(tmp_path / "plain.esm", {"x": {"op": "-", "args": ["x"]}}, {"x": ("unknown", 1.0, "1")})
    with pytest.raises(esi.EsmError) as caught:
        esi.load(path).analyze()
    assert caught.value.code == "no_analyses"
    assert not (tmp_path / "out").exists()
