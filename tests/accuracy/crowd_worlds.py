"""A check of ``--method auto``'s rule width on synthetic crowds it was not chosen on.

    python tests/accuracy/crowd_worlds.py [--json OUT]     (about a minute)

The width z of the one-standard-error rule was chosen by leave-one-dataset-out on the twelve
shared sets (crowd_lodo.py).  Here it is checked on two kinds of seeded synthetic crowds:

* independent: Dawid-Skene workers (one-coin accuracies 0.6-0.9), no worker correlation;
* correlated: 30% of the items of each class are confusable with the next class; 70% of the
  workers (the crowd) answer that decoy class on them 70% of the time, the other 30% (experts)
  are not fooled.  Errors are correlated across workers, the case EBCC's subtypes model.

For each world (3 seeds x 2 or 3 classes x 1,000 items with 5 answers or 3,000 with 7; 60
workers of log-normal activity) it fits every candidate, takes their held-out answer
log-probabilities (5 folds) and prints the accuracy of each method and of auto at each width.
A measurement, not a test: pytest does not collect it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from pyvw_lite.crowd.select import (choose_from, fit_method,  # noqa: E402
                                    held_out_log_probabilities)
from pyvw_lite.io.crowd_input import from_arrays  # noqa: E402

METHODS = ("majority", "one_coin", "bcc", "ebcc")
WIDTHS = (0.0, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0)


def crowd(seed, classes, items, workers, answers, correlated, confusable=0.3, experts=0.3):
    """(data, truth in data's item order) of one synthetic world (module docstring)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(classes, size=items)
    hard = rng.random(items) < (confusable if correlated else 0.0)
    decoy = (truth + 1) % classes
    expert = rng.random(workers) < experts
    accuracy = np.where(expert, rng.uniform(0.75, 0.9, workers), rng.uniform(0.6, 0.85, workers))
    activity = rng.lognormal(0.0, 1.0, workers)
    activity /= activity.sum()
    tasks, who, labels = [], [], []
    for i in range(items):
        for w in rng.choice(workers, size=answers, replace=False, p=activity):
            if hard[i] and not expert[w]:
                u = rng.random()
                x = decoy[i] if u < 0.7 else (truth[i] if u < 0.85 else rng.integers(classes))
            elif rng.random() < accuracy[w]:
                x = truth[i]
            else:
                x = (truth[i] + 1 + rng.integers(classes - 1)) % classes
            tasks.append(f"t{i}")
            who.append(f"w{w}")
            labels.append(str(x))
    data = from_arrays(tasks, who, labels, label_names=[str(k) for k in range(classes)])
    order = np.array([int(str(name)[1:]) for name in data.task_names])
    return data, truth[order]


def measure() -> list[dict]:
    rows = []
    for correlated in (True, False):
        for seed in (1, 2, 3):
            for classes in (2, 3):
                for items, answers in ((1000, 5), (3000, 7)):
                    data, truth = crowd(seed, classes, items, 60, answers, correlated)
                    accuracy = {}
                    for method in METHODS:
                        q, _ = fit_method(method, data, dict(restarts=3))
                        labels = np.array([int(data.label_names[k]) for k in q.argmax(axis=1)])
                        accuracy[method] = float((labels == truth).mean())
                    logs = held_out_log_probabilities(data, METHODS, folds=5,
                                                      ebcc_options=dict(restarts=3))
                    picks = {f"{z:g}": choose_from(logs, z).method for z in WIDTHS}
                    rows.append(dict(correlated=correlated, seed=seed, classes=classes,
                                     items=items, answers=answers, accuracy=accuracy,
                                     picks=picks))
    return rows


def table(rows: list[dict]) -> str:
    head = ["crowd", "worlds"] + list(METHODS) + [f"auto z={z:g}" for z in WIDTHS] \
        + ["best per world"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for correlated in (True, False):
        sub = [r for r in rows if r["correlated"] == correlated]
        mean = [np.mean([r["accuracy"][m] for r in sub]) for m in METHODS]
        auto = [np.mean([r["accuracy"][r["picks"][f"{z:g}"]] for r in sub]) for z in WIDTHS]
        best = np.mean([max(r["accuracy"].values()) for r in sub])
        lines.append("| " + " | ".join(["correlated" if correlated else "independent",
                                         str(len(sub))]
                                        + [f"{v:.4f}" for v in mean + auto + [best]]) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="also write the per-world figures here")
    args = parser.parse_args()
    rows = measure()
    print(table(rows))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
