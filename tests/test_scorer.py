"""--binary, --link logistic, --scores and --probabilities against VW 9.11.9's outputs."""
from pathlib import Path

import numpy as np
import pytest

from conftest import GOLDEN, run_workspace

HERE = Path(__file__).parent / "golden" / "scorer"


def class_values(path: Path) -> np.ndarray:
    return np.array([[float(item.split(":")[1]) for item in line.split()]
                     for line in path.read_text().splitlines()])


@pytest.mark.parametrize("flag,fixture", [("--scores", "vw.oaa10.scores"),
                                          ("--probabilities", "vw.oaa10.probabilities")])
def test_oaa_scores_and_probabilities(flag, fixture, tmp_path):
    out = tmp_path / "p.txt"
    _, err, _ = run_workspace(["-d", str(GOLDEN / "data" / "multiclass"), "--oaa", "10", flag,
                               "--loss_function", "logistic" if "prob" in flag else "squared",
                               "-p", str(out)])
    np.testing.assert_allclose(class_values(out), class_values(HERE / fixture), atol=2e-6)
    if "prob" in flag:
        assert "average multiclass log loss = 2.420804" in err


@pytest.mark.parametrize("loss,warned", [("squared", True), ("logistic", False)])
def test_probabilities_warn_without_logistic_loss(loss, warned, tmp_path):
    """As VW: the probabilities are a logistic link's, so other losses get VW's warning."""
    out, _, _ = run_workspace(["-d", str(GOLDEN / "data" / "multiclass"), "--oaa", "10",
                               "--probabilities", "--loss_function", loss,
                               "-p", str(tmp_path / "p.txt")])
    warning = ("[warning] --probabilities should be used only with --loss_function=logistic, "
               f"currently using: {loss}")
    assert (warning in out) == warned


def test_binary_reports_signs_and_zero_one_loss(tmp_path):
    out = tmp_path / "p.txt"
    _, err, _ = run_workspace(["-d", str(HERE / "bin.vw"), "--binary", "-p", str(out)])
    assert out.read_text() == (HERE / "vw.binary.predict").read_text()
    assert "average loss = 0.666667" in err and "binary, count_label" in err


def test_logistic_link(tmp_path):
    out = tmp_path / "p.txt"
    _, err, _ = run_workspace(["-d", str(HERE / "bin.vw"), "--link", "logistic",
                               "--loss_function", "logistic", "-p", str(out)])
    np.testing.assert_allclose(np.loadtxt(out), np.loadtxt(HERE / "vw.link_logistic.predict"),
                               atol=2e-6)
    assert "scorer-logistic" in err and "average loss = 0.691530" in err
