"""``--lrq`` and ``--lrqdropout`` give VW 9.11.9's predictions (its ``-p`` files in
tests/golden/lrq/): several passes with holdout from a cache, pairs in either order and of
several ranks, dropout under squared loss, and the movielens demo's ``--lrq um14 --lrqdropout``
line over 100 passes, then ``-t -i`` with its model."""
from pathlib import Path

import numpy as np
import pytest

from conftest import run_workspace
from pyvw_lite.options import OptionError
from pyvw_lite.workspace import Workspace

HERE = Path(__file__).parent / "golden" / "lrq"
DATA = Path(__file__).parent / "golden" / "interactions" / "data.vw"
TOLERANCE = 1e-4

CASES = {
    "ab2_passes3": f"-d {DATA} --lrq ab2 --passes 3 -k --cache_file {{cache}}",
    "ab3_ba2_ac1": f"-d {DATA} --lrq ab3 --lrq ba2 --lrq ac1",
    "um4_dropout_passes5": f"-d {HERE / 'ratings.train.vw'} --lrq um4 --lrqdropout --passes 5 -k "
                           "--cache_file {cache}",
}
DEMO = ("--loss_function quantile -l 0.45 -b 24 --passes 100 -k --cache_file {cache} -d "
        f"{HERE / 'ratings.train.vw'} --holdout_off --lrq um14 --lrqdropout --adaptive "
        "--invariant -f {model} -p {predictions}")


def predictions(path: Path) -> np.ndarray:
    return np.array([float(line.split()[0]) for line in path.read_text().splitlines()])


def assert_close(ours: np.ndarray, vw: np.ndarray) -> None:
    assert ours.shape == vw.shape
    worst = int(np.argmax(np.abs(ours - vw)))
    assert abs(ours[worst] - vw[worst]) <= TOLERANCE, (worst, ours[worst], vw[worst])


@pytest.mark.parametrize("case", sorted(CASES))
def test_lrq_predictions_equal_vw(case, tmp_path):
    out = tmp_path / "p"
    args = CASES[case].format(cache=tmp_path / "cache").split() + ["-p", str(out)]
    _, err, code = run_workspace(args)
    assert code == 0, err
    assert_close(predictions(out), predictions(HERE / f"vw.{case}.predict"))


def test_movielens_dropout_line_and_its_model_equal_vw(tmp_path):
    model, out = tmp_path / "m", tmp_path / "p"
    _, err, code = run_workspace(DEMO.format(cache=tmp_path / "cache", model=model,
                                             predictions=out).split())
    assert code == 0, err
    last_pass = predictions(out)[-300:]
    assert_close(last_pass, predictions(HERE / "vw.demo_dropout.last_pass.predict"))
    test = tmp_path / "t"
    _, err, code = run_workspace(["--loss_function", "quantile", "-t", "-i", str(model), "-d",
                                  str(HERE / "ratings.test.vw"), "-p", str(test)])
    assert code == 0, err
    # the model keeps --lrq um14 --lrqdropout: -t halves the latent features, as VW's
    assert_close(predictions(test), predictions(HERE / "vw.demo_dropout.test.predict"))


def test_lrq_prints_vw_lines(tmp_path):
    _, err, code = run_workspace(["-d", str(DATA), "--lrq", "ab2", "--lrqdropout",
                                  "-p", str(tmp_path / "p")])
    assert code == 0
    assert "creating low rank quadratic features for pairs: (using dropout) ab2" in err
    assert "Enabled learners: gd, lrq, scorer-identity, count_label" in err


@pytest.mark.parametrize("extra, needle", [
    ("--dyad ab", "give one of them"), ("--oaa 3", "--oaa"), ("-q ab", "-q"),
    ("--active --simulation", "--active"), ("", None)])
def test_lrq_refuses_what_it_does_not_reproduce(extra, needle):
    args = ["--lrq", "ab2", "--quiet"] + extra.split()
    if needle is None:
        Workspace(args)
        return
    with pytest.raises(OptionError, match=needle.replace("-", r"\-")):
        Workspace(args)


@pytest.mark.parametrize("term", ["a2", "abx", "ab0", "a:2"])
def test_lrq_terms_are_checked(term):
    with pytest.raises(OptionError, match="--lrq"):
        Workspace(["--lrq", term, "--quiet"])
