"""The ``--batch`` default (``--method auto``) on generated crowds with known truth.

    python tests/accuracy/crowd_worlds.py [--gen_crowd PATH] [--json OUT]     (about a minute)

The default fits BCC, or majority vote where the worker density (the median, over answers, of
the number of answers the answering worker gave) is below ``sparse_workers`` (20); it was chosen
by leave-one-dataset-out on the 21 shared sets (crowd_lodo.py).  Here it is checked on crowds
it was not chosen on, beside the methods it chooses between and the others it was chosen over:
majority vote, one-coin Dawid-Skene, BCC (``bayes_fit(subtypes=1, restarts=1)``), EBCC
(``bayes_fit(restarts=3)``) and the default (``choose_default`` then majority vote or BCC; BCC's
single restart starts from the vote shares, so the default's BCC is the BCC column's fit).

Two families of worlds, each over 3 seeds and two sizes (1,000 items with 5 answers each and
3,000 with 7):

* this script's own builder (``crowd``), 2 and 3 classes, 60 workers of log-normal activity:
  - independent: one-coin workers (accuracies 0.6-0.9), no worker correlation;
  - correlated: 30% of the items of each class are confusable with the next class; 70% of the
    workers (the crowd) answer that decoy class on them 70% of the time, the other 30%
    (experts) are not fooled.  Errors are correlated across workers, the case EBCC models.
* ``/work/shared/tools/gen_crowd.py`` (Dawid-Skene workers with full confusion matrices, item
  difficulty; run as a tool, its files read with ``read_answers`` and ``read_gold``), the
  scenarios of ``SCENARIOS``: a mostly good crowd, 40% spammers, 20% adversaries, strong item
  difficulty, and three sparse crowds whose density falls below the threshold: workers =
  2 x answers of uniform activity (most give one answer; density 1), answers / 2 (density 4)
  and answers / 8 (density 13-16), the last two of log-normal activity.

Accuracy is over all items (every one has its truth); ties go to the lowest label index, as in
the CLI.  It prints a table per family (rows: world kinds, means over seeds and sizes, with the
range of worker densities, the way the default went, its worst gap to majority vote and the
share of items whose vote ties), a table of every world, the worst world for "default minus
majority vote", the number of worlds where the default is more than 0.01 below majority vote,
and, on the worlds the default sends to majority vote, how far BCC is above it on all items and
on the items whose vote does not tie (a gain from breaking ties apart from one from weighing
workers).  The JSON beside it (``crowd_worlds.json``) holds every world's figures, the
gen_crowd.py flags and the run time.  A measurement, not a test: pytest does not collect it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from pyvw_lite.crowd import baselines  # noqa: E402
from pyvw_lite.crowd.bayes import bayes_fit  # noqa: E402
from pyvw_lite.crowd.select import choose_default  # noqa: E402
from pyvw_lite.io.crowd_input import (from_arrays, known_labels, read_answers,  # noqa: E402
                                      read_gold)

METHODS = ("majority", "one_coin", "bcc", "ebcc")
SEEDS = (1, 2, 3)
SIZES = ((1000, 5), (3000, 7))  # (items, answers per item)
GEN_CROWD = "/work/shared/tools/gen_crowd.py"
WORKERS = 100  # gen_crowd workers in the dense scenarios

# gen_crowd scenarios: kind -> (classes, workers for (items, answers), flags)
SCENARIOS = {
    "gen: mostly good": (3, lambda n, r: WORKERS,
                         ["--frac-good", "0.8", "--frac-medium", "0.2", "--frac-spammer", "0",
                          "--frac-adversarial", "0"]),
    "gen: 40% spammers": (2, lambda n, r: WORKERS,
                          ["--frac-good", "0.35", "--frac-medium", "0.25", "--frac-spammer",
                           "0.4", "--frac-adversarial", "0"]),
    "gen: 20% adversaries": (3, lambda n, r: WORKERS,
                             ["--frac-good", "0.5", "--frac-medium", "0.3", "--frac-spammer",
                              "0", "--frac-adversarial", "0.2"]),
    "gen: hard items": (5, lambda n, r: WORKERS, ["--diff-a", "2", "--diff-b", "2"]),
    "gen: one answer each": (3, lambda n, r: 2 * n * r, ["--activity-sigma", "0"]),
    "gen: sparse workers": (3, lambda n, r: n * r // 2, []),
    "gen: a few answers each": (3, lambda n, r: n * r // 8, []),
}
SPARSE = {"gen: one answer each": "items x answers x 2",
          "gen: sparse workers": "items x answers / 2",
          "gen: a few answers each": "items x answers / 8"}


def crowd(seed, classes, items, workers, answers, correlated, confusable=0.3, experts=0.3):
    """(data, truth in data's item order) of one world of this script's own builder."""
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


def gen_flags(kind: str, seed: int, items: int, answers: int) -> list[str]:
    """gen_crowd.py's arguments (without --out) for one world of ``kind``."""
    classes, workers, extra = SCENARIOS[kind]
    return ["--tasks", str(items), "--workers", str(workers(items, answers)), "--classes",
            str(classes), "--r", str(answers), "--seed", str(seed)] + extra


def generated(tool: str, flags: list[str], where: str):
    """(data, truth in data's item order) of one gen_crowd.py world."""
    subprocess.run([sys.executable, tool, *flags, "--out", where], check=True,
                   stdout=subprocess.DEVNULL)
    data = read_answers(os.path.join(where, "answers.csv"))
    truth = known_labels(data, read_gold(os.path.join(where, "truth.csv")), "truth")
    if (truth < 0).any():
        raise SystemExit(f"{where}: {(truth < 0).sum()} items without truth")
    return data, truth


def score(data, truth) -> dict:
    """Each method's and the default's accuracy, the worker density and the way it went."""
    accuracy, posteriors = {}, {}
    for method in METHODS:
        if method == "majority":
            q = baselines.majority_vote(data)
        elif method == "one_coin":
            q = baselines.one_coin_dawid_skene(data)[0]
        elif method == "bcc":
            q = bayes_fit(data, subtypes=1, restarts=1).q
        else:
            q = bayes_fit(data, restarts=3).q
        posteriors[method] = q
        accuracy[method] = float((q.argmax(axis=1) == truth).mean())
    choice = choose_default(data)
    accuracy["default"] = float((posteriors[choice.method].argmax(axis=1) == truth).mean())
    vote = posteriors["majority"]
    tied = (vote >= vote.max(axis=1, keepdims=True) - 1e-6).sum(axis=1) > 1
    untied = {m: float((posteriors[m].argmax(axis=1) == truth)[~tied].mean())
              for m in ("majority", "bcc")}
    return dict(accuracy=accuracy, density=choice.density, default=choice.method,
                workers=len(data.worker_names), answers=int(data.n_ratings),
                labels=int(data.n_labels), tied=float(tied.mean()), untied=untied)


def measure(tool: str) -> list[dict]:
    rows = []
    for correlated in (False, True):
        kind = "correlated" if correlated else "independent"
        for seed in SEEDS:
            for classes in (2, 3):
                for items, answers in SIZES:
                    data, truth = crowd(seed, classes, items, 60, answers, correlated)
                    rows.append(dict(kind=kind, seed=seed, items=items, per_item=answers,
                                     **score(data, truth)))
                    progress(rows[-1])
    with tempfile.TemporaryDirectory() as scratch:
        for kind in SCENARIOS:
            for seed in SEEDS:
                for items, answers in SIZES:
                    flags = gen_flags(kind, seed, items, answers)
                    where = os.path.join(scratch, f"{len(rows)}")
                    data, truth = generated(tool, flags, where)
                    rows.append(dict(kind=kind, seed=seed, items=items, per_item=answers,
                                     flags=" ".join(flags), **score(data, truth)))
                    progress(rows[-1])
    return rows


def progress(row: dict) -> None:
    print(f"{row['kind']} seed {row['seed']} K={row['labels']} {row['items']}x"
          f"{row['per_item']}: density {row['density']:g} -> {row['default']}; "
          + ", ".join(f"{m} {a:.4f}" for m, a in row["accuracy"].items()),
          file=sys.stderr, flush=True)


COLUMNS = METHODS + ("default",)


def family_table(rows: list[dict]) -> str:
    head = ["world kind", "worlds", "K", "density (min-max)"] + list(COLUMNS) \
        + ["default went", "default - majority (min)", "tied votes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for kind in dict.fromkeys(r["kind"] for r in rows):
        sub = [r for r in rows if r["kind"] == kind]
        mean = [np.mean([r["accuracy"][m] for r in sub]) for m in COLUMNS]
        ways = {w: sum(r["default"] == w for r in sub) for w in ("bcc", "majority")}
        went = ", ".join(f"{w} {n}" for w, n in ways.items() if n)
        gap = min(r["accuracy"]["default"] - r["accuracy"]["majority"] for r in sub)
        densities = [r["density"] for r in sub]
        ks = "/".join(str(k) for k in sorted({r["labels"] for r in sub}))
        lines.append("| " + " | ".join([kind, str(len(sub)), ks,
                                         f"{min(densities):g}-{max(densities):g}"]
                                        + [f"{v:.4f}" for v in mean]
                                        + [went, f"{gap:+.4f}",
                                           f"{np.mean([r['tied'] for r in sub]):.3f}"]) + " |")
    return "\n".join(lines)


def world_table(rows: list[dict]) -> str:
    head = ["world kind", "seed", "K", "items x answers", "workers", "density", "default went"] \
        + list(COLUMNS) + ["best"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        best = max(METHODS, key=lambda m: r["accuracy"][m])
        lines.append("| " + " | ".join(
            [r["kind"], str(r["seed"]), str(r["labels"]), f"{r['items']}x{r['per_item']}",
             str(r["workers"]), f"{r['density']:g}", r["default"]]
            + [f"{r['accuracy'][m]:.4f}" for m in COLUMNS] + [best]) + " |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> dict:
    gaps = [r["accuracy"]["default"] - r["accuracy"]["majority"] for r in rows]
    worst = int(np.argmin(gaps))
    below = [i for i, g in enumerate(gaps) if g < -0.01]
    # the switch's misses: sent to majority where BCC was better, or to BCC where it was worse
    missed = [i for i, r in enumerate(rows) if r["default"] == "majority"
              and r["accuracy"]["bcc"] > r["accuracy"]["majority"] + 0.01]
    sent = [r for r in rows if r["default"] == "majority"]
    cost = dict(all=float(np.mean([r["accuracy"]["bcc"] - r["accuracy"]["majority"]
                                   for r in sent])) if sent else 0.0,
                untied=float(np.mean([r["untied"]["bcc"] - r["untied"]["majority"]
                                      for r in sent])) if sent else 0.0)
    return dict(worst_gap=gaps[worst], worst_world=rows[worst]["kind"]
                + f" seed {rows[worst]['seed']} K={rows[worst]['labels']} "
                f"{rows[worst]['items']}x{rows[worst]['per_item']}",
                worlds=len(rows), below_majority_by_001=len(below),
                majority_where_bcc_better_by_001=len(missed), sent_to_majority=len(sent),
                bcc_minus_majority_where_sent_to_majority=cost,
                mean={m: float(np.mean([r["accuracy"][m] for r in rows])) for m in COLUMNS})


def report(rows: list[dict], facts: dict) -> str:
    own = [r for r in rows if not r["kind"].startswith("gen:")]
    gen = [r for r in rows if r["kind"].startswith("gen:")]
    return "\n".join([
        "Own builder (means over 3 seeds x 2 sizes x K=2,3):", "", family_table(own), "",
        "gen_crowd.py (means over 3 seeds x 2 sizes):", "", family_table(gen), "",
        "Every world:", "", world_table(rows), "",
        f"default minus majority, worst world: {facts['worst_gap']:+.4f} "
        f"({facts['worst_world']})",
        f"worlds where the default is more than 0.01 below majority vote: "
        f"{facts['below_majority_by_001']} of {facts['worlds']}",
        f"worlds sent to majority vote where BCC was more than 0.01 above it: "
        f"{facts['majority_where_bcc_better_by_001']} of {facts['sent_to_majority']}",
        "BCC minus majority vote on the worlds sent to majority vote, mean: "
        f"{facts['bcc_minus_majority_where_sent_to_majority']['all']:+.4f} on all items, "
        f"{facts['bcc_minus_majority_where_sent_to_majority']['untied']:+.4f} on the items "
        "whose vote does not tie",
        "mean over all worlds: " + ", ".join(f"{m} {v:.4f}" for m, v in facts["mean"].items())])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gen_crowd", default=GEN_CROWD, help="path of gen_crowd.py")
    parser.add_argument("--json", default=os.path.join(HERE, "crowd_worlds.json"),
                        help="where the per-world figures go")
    args = parser.parse_args()
    started = time.perf_counter()
    rows = measure(args.gen_crowd)
    seconds = time.perf_counter() - started
    facts = summary(rows)
    print(report(rows, facts))
    print(f"\n{seconds:.0f} s")
    flags = {kind: dict(classes=c, workers=SPARSE.get(kind, str(WORKERS)), flags=" ".join(extra))
             for kind, (c, _, extra) in SCENARIOS.items()}
    with open(args.json, "w") as out:
        json.dump(dict(worlds=rows, summary=facts, gen_crowd=flags, seconds=round(seconds, 1)),
                  out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
