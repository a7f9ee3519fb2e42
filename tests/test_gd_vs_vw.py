"""Predictions match VW 9.11.9's (stored with -p) for every update flag set, loss and importance
weights {0.3, 1, 2.5, 7} (VW_FACTS §4's verification list, plus --noconstant, --constant and
--ignore_linear with -q)."""
from pathlib import Path

import numpy as np
import pytest

from conftest import run_workspace

HERE = Path(__file__).parent / "golden" / "gd"
CONFIGS = {
    "default": "", "invariant": "--invariant", "normalized": "--normalized",
    "adaptive_invariant": "--adaptive --invariant",
    "normalized_invariant": "--normalized --invariant", "power_t_0.3": "--power_t 0.3",
    "initial_t_5": "--initial_t 5", "l2_p1_t10": "-l 2 --power_t 1 --initial_t 10",
    "sgd_l0.1_p0": "--sgd -l 0.1 --power_t 0", "sgd_l1": "--sgd -l 1",
    "noconstant": "--noconstant", "constant_2": "--constant 2",
    "ignore_linear_T_qTf": "--ignore_linear T -q Tf",
}
# Non-invariant updates with large importance weights amplify rounding: VW computes in float32,
# we in float64 (weights stored as float32), so these drift apart by up to ~1e-3 while every
# invariant configuration agrees to 2e-5.  With VW's default rate 10 they are chaotic outright
# (VW_FACTS §4 saw the same between VW and a re-implementation).
# --normalized alone on squared loss agrees to 8e-5 over all 200 predictions; only --sgd -l 1
# on squared loss diverges (below)
FLOAT32_SENSITIVE = {("sgd_l0.1_p0", "squared"), ("normalized", "squared")}
CHAOTIC = {("sgd_l1", "squared")}


def read_predictions(path: Path):
    values, tags = [], []
    for line in path.read_text().splitlines():
        value, _, tag = line.partition(" ")
        values.append(float(value))
        tags.append(tag)
    return np.array(values), tags


@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_predictions_match_vw(name, loss, tmp_path):
    data = HERE / ("regression.vw" if loss == "squared" else "binary.vw")
    out = tmp_path / "p.txt"
    _, _, code = run_workspace(["-d", str(data), "--loss_function", loss, "-p", str(out),
                                "--quiet", *CONFIGS[name].split()])
    assert code == 0
    ours, our_tags = read_predictions(out)
    theirs, their_tags = read_predictions(HERE / f"vw.{name}.{loss}.predict")
    assert our_tags == their_tags
    # logistic: VW approximates Lambert W (|error| < 9e-5 per update), we solve it exactly
    tolerance = 2e-4 if loss == "logistic" else 2e-5
    if (name, loss) in FLOAT32_SENSITIVE:
        tolerance = 1e-3
    if (name, loss) in CHAOTIC:
        # the run oscillates once an importance-7 example overshoots (example 31 for --sgd -l 1);
        # a float32 re-simulation departs from VW there too, so only the stable prefix is compared
        assert np.all(np.isfinite(ours))
        ours, theirs = ours[:25], theirs[:25]
        tolerance = 1e-4
    np.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance)


# --l1/--l2 (VW's truncation gravity and global contraction) and the quantile loss, against VW
# 9.11.9's -p files and summaries (vw.reg.<name>.*)
REGULARIZED = {
    "l2_1e-3": ("regression.vw", "--l2 1e-3"),
    "l1_1e-3": ("regression.vw", "--l1 1e-3"),
    "l1_l2": ("regression.vw", "--l1 1e-4 --l2 1e-3"),
    "l2_sgd": ("regression.vw", "--l2 1e-3 --sgd -l 0.05"),
    "l1_normalized_invariant": ("regression.vw", "--l1 1e-3 --normalized --invariant"),
    "l1_l2_logistic": ("binary.vw", "--l1 1e-4 --l2 1e-4 --loss_function logistic"),
    "quantile": ("regression.vw", "--loss_function quantile"),
    "quantile_tau0.2_sgd": ("regression.vw",
                            "--loss_function quantile --quantile_tau 0.2 --sgd -l 0.1"),
    "quantile_tau0.7_l1": ("regression.vw", "--loss_function quantile --quantile_tau 0.7 --l1 1e-3"),
    "quantile_adaptive_invariant": ("regression.vw", "--loss_function quantile --quantile_tau 0.3 "
                                    "--adaptive --invariant"),
}


def summary_numbers(text: str) -> dict:
    keys = ("average loss", "best constant", "best constant's loss")
    return {key: float(value) for key, _, value in
            (line.partition(" = ") for line in text.splitlines()) if key in keys}


@pytest.mark.parametrize("name", list(REGULARIZED))
def test_regularized_and_quantile_runs_match_vw(name, tmp_path):
    data, flags = REGULARIZED[name]
    out = tmp_path / "p.txt"
    _, err, code = run_workspace(["-d", str(HERE / data), "-p", str(out), *flags.split()])
    assert code == 0
    ours, our_tags = read_predictions(out)
    theirs, their_tags = read_predictions(HERE / f"vw.reg.{name}.predict")
    assert our_tags == their_tags
    tolerance = 2e-4 if "logistic" in flags else 2e-5
    np.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance)
    vw_summary = summary_numbers((HERE / f"vw.reg.{name}.stderr").read_text())
    assert set(summary_numbers(err)) == set(vw_summary)
    for key, value in summary_numbers(err).items():
        assert value == pytest.approx(vw_summary[key], abs=2e-6), key
    header = [line for line in err.splitlines() if "regularization" in line]
    assert header == [line for line in (HERE / f"vw.reg.{name}.stderr").read_text().splitlines()
                      if "regularization" in line]


def test_l1_truncation_survives_passes_and_saves_as_in_vw(tmp_path):
    """Three passes over a cache with holdout (so the model is saved after each improving pass):
    VW folds the gravity and contraction into the weights only for the file it writes, and a
    weight truncated to 0 keeps its stored value while learning goes on; folding them in at a
    pass end or a save changes the second pass's predictions (by up to 0.45 here)."""
    out, model = tmp_path / "p.txt", tmp_path / "m.pvw"
    _, _, code = run_workspace(["-d", str(HERE / "regression.vw"), "--l1", "1e-3", "--l2", "1e-4",
                                "--passes", "3", "-c", "--cache_file", str(tmp_path / "c"),
                                "-f", str(model), "-p", str(out), "--quiet"])
    assert code == 0
    ours, _ = read_predictions(out)
    theirs, _ = read_predictions(HERE / "vw.reg.l1_l2_passes.predict")
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-5)
    _, _, code = run_workspace(["-d", str(HERE / "regression.vw"), "-t", "-i", str(model),
                                "-p", str(out), "--quiet"])
    assert code == 0
    ours, _ = read_predictions(out)
    theirs, _ = read_predictions(HERE / "vw.reg.l1_l2_passes.test.predict")
    np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-5)
