"""Online EM against batch EM of the same model.

Online EM without --batch fits the nominal label model of ``--batch --method em`` on sufficient
statistics, in stream order (crowd/online.py).  On the 27 shared real sets, ten passes come
within 0.01 of batch EM's accuracy except on the sets listed in ``GAPS``, where the two end at
different stationary points of the same objective and the measured gap (batch minus online) is
asserted not to grow; on the small sets, the command's default pass count does not
collapse (the stochastic-gradient schedule it replaced put nyt_relevance_3p at 0.31 against
batch EM's 0.575).  The sets live in ../shared/datasets/crowd beside the repository (skipped
elsewhere, as in test_crowd_default.py).
"""
from __future__ import annotations


import numpy as np
import pytest

from crowd_shared import ALL, SHARED, present
from pyvw_lite.crowd import baselines, kernels
from pyvw_lite.crowd.batch import batch_em
from pyvw_lite.crowd.model import CrowdConfig, CrowdModel
from pyvw_lite.crowd.online import run_online
from pyvw_lite.crowd.run import CrowdRun
from pyvw_lite.io.crowd_input import known_labels, read_answers, read_gold

SETS = present(ALL)
PASSES = 10
# batch minus online accuracy at 10 passes, measured 2026-11-29 (docs/crowd.md): no M-step
# schedule measured by tests/accuracy/crowd_online_schedule.py closes them
GAPS = {"nyt_relevance_3p": -0.0167, "s5_AdultContent": -0.0150, "slr_loneliness": 0.0200}
# the sets of at most 300 items, where a schedule's first steps decide
SMALL = present(("act_CF", "cubam_bluebirds", "cubam_ducks", "nyt_relevance_3p",
                 "roitero_politifact_s6", "slr_loneliness", "snow_wsd"))


def _online(data, passes):
    model = CrowdModel(CrowdConfig(n_labels=data.n_labels, label_names=data.label_names))
    run_online(data, model, passes=passes)
    return model, run_online(data, model, test_only=True).q


def _scored(name):
    data = read_answers(str(SHARED / name / "answers.csv"))
    known = known_labels(data, read_gold(str(SHARED / name / "truth.csv")), "truth")
    scored = known >= 0
    config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names,
                         worker_map="exact")

    def accuracy(q):
        return (q.argmax(axis=1)[scored] == known[scored]).mean()

    return data, accuracy, accuracy(batch_em(data, config).q)


@pytest.mark.parametrize("name", SETS)
def test_online_em_is_within_001_of_batch_em(name):
    data, accuracy, batch = _scored(name)
    online = accuracy(_online(data, PASSES)[1])
    allowed = abs(GAPS[name]) + 0.005 if name in GAPS else 0.01
    assert abs(batch - online) <= allowed, (name, batch, online)


@pytest.mark.parametrize("name", SMALL)
def test_the_default_passes_do_not_collapse_on_a_small_set(name):
    """At the command's default pass count, no small set falls below the lower of batch EM's
    and majority vote's accuracy by more than 0.01."""
    data, accuracy, batch = _scored(name)
    assert data.n_items <= 300
    default_passes = CrowdRun(answers="").passes
    online = accuracy(_online(data, default_passes)[1])
    vote = accuracy(baselines.majority_vote(data))
    assert online >= min(batch, vote) - 0.01, (name, online, batch, vote)


def _small_data():
    rng = np.random.default_rng(7)
    rows = ["task,worker,label"]
    for item in range(60):
        truth = item % 3
        for worker in rng.choice(8, size=4, replace=False):
            label = truth if rng.random() < 0.75 else int(rng.integers(3))
            rows.append(f"i{item},w{worker},{label}")
    return rows


@pytest.mark.parametrize("fraction", (0.0, 0.25, 1.0))
def test_the_statistics_hold_each_item_once(tmp_path, fraction):
    """After any number of passes, stats[m, l, k] is the sum over slot m's answers l of the
    answering item's latest posterior of truth k: each pass replaces an item's contribution,
    whether the M-step follows every item or a block of them (``block_fraction``)."""
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(_small_data()) + "\n")
    data = read_answers(str(path))
    for passes in (1, 3):
        model = CrowdModel(CrowdConfig(n_labels=data.n_labels, label_names=data.label_names))
        result = run_online(data, model, passes=passes, block_fraction=fraction)
        slots = model.slots_for(data)
        item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
        expected = np.zeros_like(model.stats)
        np.add.at(expected, (slots, data.rating_label), result.q[item])
        assert np.allclose(model.stats, expected, atol=1e-9)
        assert np.allclose(model.class_mass, result.q.sum(axis=0), atol=1e-9)
        assert model.stats.sum() == pytest.approx(data.n_ratings)


def test_online_em_is_reproducible_and_passes_climb_toward_batch(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(_small_data()) + "\n")
    data = read_answers(str(path))
    first = _online(data, 4)
    again = _online(data, 4)
    assert np.array_equal(first[0].alpha, again[0].alpha)
    assert np.array_equal(first[1], again[1])
    config = CrowdConfig(n_labels=data.n_labels, label_names=data.label_names,
                         worker_map="exact")
    batch = batch_em(data, config).q
    one = np.abs(_online(data, 1)[1] - batch).max()
    many = np.abs(_online(data, 30)[1] - batch).max()
    assert many < one and many < 1e-3, (one, many)


def test_the_class_prior_step_is_batch_ems():
    """theta_newton maximises counts.theta - n log sum exp(theta) - |theta - base|^2 / 2: at its
    result the gradient vanishes."""
    theta = np.zeros(3)
    counts = np.array([50.0, 30.0, 20.0])
    base = np.log(np.full(3, 1 / 3))
    kernels.theta_newton(theta, counts, counts.sum(), base, 20)
    soft = np.exp(theta - theta.max())
    soft /= soft.sum()
    assert np.abs(counts - counts.sum() * soft - (theta - base)).max() < 1e-9


def test_the_rank_one_row_step_is_batch_ems_cholesky_step():
    """Online EM solves each row's Newton step by Sherman-Morrison (O(K)); batch EM factorises
    the Hessian (O(K^3)).  From the same start and counts they reach the same rows."""
    rng = np.random.default_rng(1)
    K = 6
    alpha = rng.normal(size=(3, K, K))
    for slot in alpha:
        np.fill_diagonal(slot, 0.0)
    mu = rng.normal(size=(K, K))
    np.fill_diagonal(mu, 0.0)
    stats = rng.exponential(size=(3, K, K)) * 5
    used = np.array([True, False, True])
    cholesky, rank_one = alpha.copy(), alpha.copy()
    kernels.alpha_rows_step(cholesky, mu, stats, used, 1.0, 4.0, 3, False)
    kernels.alpha_rows_step(rank_one, mu, stats, used, 1.0, 4.0, 3, True)
    assert np.abs(cholesky - rank_one).max() < 1e-10
    assert np.abs(cholesky[0] - alpha[0]).max() > 0.1  # the rows did move
    assert np.array_equal(rank_one[1], alpha[1])  # an unused slot is left alone


@pytest.mark.parametrize("fraction", (-0.1, 1.5, float("nan")))
def test_a_block_fraction_outside_0_to_1_is_refused(tmp_path, fraction):
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(_small_data()) + "\n")
    data = read_answers(str(path))
    model = CrowdModel(CrowdConfig(n_labels=data.n_labels, label_names=data.label_names))
    with pytest.raises(ValueError, match="block_fraction"):
        run_online(data, model, block_fraction=fraction)
