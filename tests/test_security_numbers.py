"""Numbers from files, options and arrays that would reach a kernel, and text that would switch
a mode or merge what is distinct: each refused in one line naming where it came from, or read
as the learner reads it (docs/security.md)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import run_workspace
from pyvw_lite.cli.main import main
from pyvw_lite.io.model_io import load_model, save_model

RATINGS = "".join(f"{1 if (u + m) % 3 else -1} |u u{u} |i i{m}\n"
                  for u in range(12) for m in range(0, 36, 2))


@pytest.fixture
def dyadic_model(tmp_path):
    """A signed dyadic model (logistic, --dyad ui) and its data file."""
    data = tmp_path / "d.vw"
    data.write_text(RATINGS)
    model = tmp_path / "m.pvw"
    _, err, code = run_workspace(["-d", str(data), "--dyad", "ui", "--loss_function",
                                  "logistic", "-f", str(model), "--quiet"])
    assert code == 0, err
    return data, model


def test_a_model_whose_latent_scale_takes_the_rate_below_its_bound_is_refused(
        dyadic_model, tmp_path, capsys):
    """A stored ``dyad_rate_scale`` of 1e-300 is inside (0, 1] but takes the latent rate to
    3e-302, where the flow gives NaN: it was loaded and 1999 of 2000 predictions were NaN with
    exit 0.  The bound a decaying pass stops at is applied at load."""
    data, model = dyadic_model
    saved = load_model(str(model))
    hostile = tmp_path / "tiny.pvw"
    for scale, refused in ((1e-300, True), (1e-9 / 0.03 * 0.999, True), (1e-9 / 0.03, False)):
        saved.state["dyad_rate_scale"] = scale
        save_model(str(hostile), saved, "0")
        code = main(["-d", str(data), "-i", str(hostile), "--quiet", "-p",
                     str(tmp_path / "p.txt")])
        err = capsys.readouterr().err
        if refused:
            assert code == 1 and err.count("\n") == 1, err
            assert str(hostile) in err and "latent rate scale" in err, err
            assert not (tmp_path / "p.txt").exists()
        else:
            assert code == 0, err
            assert "nan" not in (tmp_path / "p.txt").read_text()
