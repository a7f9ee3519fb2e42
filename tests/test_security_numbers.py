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


@pytest.mark.parametrize("argv, needle", [
    (["-l", "1e8", "--loss_function", "logistic", "--dyad", "ui"], "'--learning_rate': 1e+08"),
    (["-l", "1e300"], "'--learning_rate': 1e+300"),
    (["-l", "-1"], "'--learning_rate': -1"),
    (["-l", "20", "--dyad", "ui", "--dyad_rate", "10"], "'-l 20 --dyad_rate 10'"),
    (["--sgd", "--initial_t", "1e300"], "gives a rate of 1e+151")])
def test_rates_beyond_where_updates_stay_finite_are_refused(tmp_path, argv, needle, capsys):
    """-l 1e8 --loss_function logistic --dyad ui predicted NaN for 79 of 200 examples with
    exit 0: -l is bounded, and under --dyad so is its product with --dyad_rate."""
    data = tmp_path / "d.vw"
    data.write_text(RATINGS)
    assert main(["-d", str(data), "-p", str(tmp_path / "p.txt"), "--quiet", *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "p.txt").exists()


def test_a_rate_stored_in_a_model_is_bounded_and_named(dyadic_model, tmp_path, capsys):
    """-l 1e300 in a model's stored options (digest valid) predicted NaN for 194 of 200."""
    data, model = dyadic_model
    saved = load_model(str(model))
    saved.options = [*saved.options, "--learning_rate", "1e300"]
    hostile = tmp_path / "fast.pvw"
    save_model(str(hostile), saved, "0")
    assert main(["-d", str(data), "-i", str(hostile), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1e+300" in err and str(hostile) in err, err


def test_a_loss_that_stops_being_finite_stops_the_run_naming_the_rates(tmp_path, monkeypatch,
                                                                      capsys):
    """The backstop behind the bounds: a batch whose loss is not finite (here forced on the
    kernel's output) stops the run with one line naming the example and the rates, exit 1,
    no -p written; the check runs once per batch on the kernel's outputs."""
    from pyvw_lite.learner.core import Learner
    data = tmp_path / "d.vw"
    data.write_text(RATINGS)
    real = Learner._run_kernel

    def poisoned(self, batch, rows, holdout, training):
        pred, raw, loss, nfeat = real(self, batch, rows, holdout, training)
        loss[3] = np.nan
        return pred, raw, loss, nfeat

    monkeypatch.setattr(Learner, "_run_kernel", poisoned)
    out = tmp_path / "p.txt"
    assert main(["-d", str(data), "--dyad", "ui", "-p", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{data}:4: learning diverged" in err, err
    assert "-l 0.5 with --dyad_rate 0.09" in err and not out.exists()
