"""examples/python/ozone_box.py runs as the README says and writes its two figures."""
import os
import subprocess
import sys

import pytest

from conftest import SOURCE


def test_the_newcomers_script_writes_its_figures(tmp_path):
    pytest.importorskip("matplotlib")
    r = subprocess.run([sys.executable, str(SOURCE / "examples" / "python" / "ozone_box.py"), str(tmp_path)],
                       capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"))
    assert r.returncode == 0, r.stderr
    for name in ("ozone_o3.png", "ozone_response.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    assert "O3 after 6 h between" in r.stdout


def test_a_pandas_table_sweeps_like_a_dict(esi):
    pd = pytest.importorskip("pandas")
    import numpy as np
    from conftest import OZONE
    m = esi.load(OZONE)
    frame = pd.DataFrame({"jNO2": [0.004, 0.008], "E_NO": [1e11, 2e11]})
    a = m.sweep(frame, (0, 3600), saveat=600)
    b = m.sweep({"jNO2": np.array([0.004, 0.008]), "E_NO": [1e11, 2e11]}, (0, 3600), saveat=600)
    assert np.array_equal(a["OzoneNOx_O3"].values, b["OzoneNOx_O3"].values)
