"""Majority vote's ties: among all-different answers, the label that best explains the others
under the confusion pooled over all workers; other ties, the lowest label."""
from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest

from crowd_shared import SHARED, present
from pyvw_lite.cli.main import main
from pyvw_lite.crowd.baselines import majority_vote
from pyvw_lite.io.crowd_input import from_arrays


def _crowd(rows):
    tasks, workers, labels = zip(*rows)
    return from_arrays(list(tasks), list(workers), list(labels))


def _untied_cat_dog_tasks():
    """Tasks whose plurality is 'cat' and whose odd answer is often 'dog', and a few unanimous
    'dog' tasks: a pooled confusion where a cat is often answered 'dog' but a dog never 'cat',
    and 'frog' never comes with either."""
    rows = []
    for t in range(30):
        rows += [(f"u{t}", "a", "cat"), (f"u{t}", "b", "cat"), (f"u{t}", "c", "dog")]
        rows += [(f"v{t}", "a", "cat"), (f"v{t}", "b", "cat"), (f"v{t}", "c", "cat")]
    for t in range(10):
        rows += [(f"d{t}", "a", "dog"), (f"d{t}", "b", "dog"), (f"d{t}", "c", "dog")]
    for t in range(30):
        rows += [(f"f{t}", "a", "frog"), (f"f{t}", "b", "frog"), (f"f{t}", "c", "frog")]
    return rows


def test_an_all_different_tie_goes_to_the_label_that_explains_the_others():
    rows = _untied_cat_dog_tasks() + [("x", "a", "dog"), ("x", "b", "cat"), ("x", "c", "frog")]
    data = _crowd(rows)
    names = list(data.label_names)
    x = list(data.task_names).index("x")
    q = majority_vote(data)
    assert names[int(q[x].argmax())] == "cat"  # a cat explains 'dog'; 'frog' is anyone's slip
    assert names[int(majority_vote(data, ties="lowest")[x].argmax())] == "cat"
    # the same crowd with the labels renamed: the lowest-label rule now picks 'ape'
    renamed = [(t, w, {"frog": "ape"}.get(label, label)) for t, w, label in rows]
    data = _crowd(renamed)
    names = list(data.label_names)
    assert names[int(majority_vote(data, ties="lowest")[x].argmax())] == "ape"
    assert names[int(majority_vote(data)[x].argmax())] == "cat"


def test_a_two_way_tie_still_goes_to_the_lowest_label_and_shares_stay_shares():
    rows = _untied_cat_dog_tasks() + [("y", "a", "dog"), ("y", "b", "dog"), ("y", "c", "cat"),
                                      ("y", "d", "cat")]
    data = _crowd(rows)
    q = majority_vote(data)
    y = list(data.task_names).index("y")
    assert data.label_names[int(q[y].argmax())] == "cat"
    assert np.allclose(q.sum(axis=1), 1.0, atol=1e-8)
    assert np.allclose(q[y][q[y] > 0], 0.5, atol=1e-8)


def test_an_unknown_tie_rule_is_refused():
    with pytest.raises(ValueError, match="ties must be one of"):
        majority_vote(_crowd(_untied_cat_dog_tasks()), ties="random")


@pytest.mark.skipif(not present(["cifar10n"]), reason=f"{SHARED} is not beside this checkout")
def test_majority_vote_on_cifar10n_reaches_crowd_kits():
    folder = SHARED / "cifar10n"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["crowd", str(folder / "answers.csv"), "--batch", "--method", "majority",
                     "--truth", str(folder / "truth.csv"), "-p", "/dev/null"])
    assert code == 0, err.getvalue()
    accuracy = float(re.search(r"accuracy on \d+ truth items = ([0-9.]+)", err.getvalue()).group(1))
    assert accuracy >= 0.9155, accuracy  # crowd-kit's MajorityVote; the lowest-label rule 0.9118
