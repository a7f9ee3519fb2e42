"""EBCC at 10 restarts against the authors' reference code, set by set, in one process.

    python tests/accuracy/ebcc_speed.py --reference PATH/TO/ebcc.py [--sets a,b,...] [--json OUT]

``--reference`` is a Python file defining the authors' ``ebcc_vb(tuples, num_groups, a_pi,
alpha, a_v, b_v, seed, max_iter, empirical_prior)`` (Li, Rubinstein & Cohn, ICML 2019; not
bundled here).  On each set it runs the reference over seeds 0-9 with CROWD_FACTS.md's settings
(M = 10, empirical class prior, the best bound kept), then ``bayes_fit(restarts=10)`` with
plain coordinate ascent and with SQUAREM cycles (the default), and prints CPU seconds
(``process_time``: ours summed over its two restart threads) and wall seconds of each.  CPU
seconds are the figure to compare on a machine that is running other work; on a quiet 2-core
machine our wall time is about half our CPU time.

Without ``--reference`` it times ours alone against CROWD_FACTS.md's wall figures for the
reference (measured on a quiet day, 0.1 s resolution).

A measurement, not a test: pytest does not collect it.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from pyvw_lite.crowd.bayes import bayes_fit  # noqa: E402
from pyvw_lite.io.crowd_input import known_labels, read_answers, read_gold  # noqa: E402

# CROWD_FACTS.md, "EBCC on the shared sets": the reference's wall seconds for 10 restarts
FACTS = {"act_CF": 1.2, "act_MS": 2.9, "cubam_bluebirds": 0.3, "d_jn-product": 2.1,
         "d_sentiment": 2.0, "s4_Face_Sentiment_Identification": 1.9, "s4_Relevance": 41.2,
         "smem_dog": 0.5, "smem_web": 8.2, "snow_rte": 0.4, "snow_temp": 0.4, "snow_wsd": 0.0}
SHARED = os.path.join(os.path.dirname(os.path.dirname(HERE)), "..", "shared", "datasets",
                      "crowd")


def timed(fit):
    cpu, wall = time.process_time(), time.perf_counter()
    result = fit()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def measure(name: str, reference) -> dict:
    data = read_answers(os.path.join(SHARED, name, "answers.csv"))
    known = known_labels(data, read_gold(os.path.join(SHARED, name, "truth.csv")), "truth")
    scored = known >= 0

    def accuracy(q):
        return float((q.argmax(axis=1)[scored] == known[scored]).mean())

    bayes_fit(data, restarts=1, max_iters=5)  # compiled before timing
    row = dict(set=name)
    if reference is not None:
        item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
        tuples = np.stack([item, data.rating_worker, data.rating_label], axis=1)

        def run_reference():
            best = None
            for seed in range(10):
                z, elbo, _ = reference.ebcc_vb(tuples.astype(np.int64), num_groups=10,
                                               seed=seed, empirical_prior=True)
                if best is None or elbo > best[1]:
                    best = (z, elbo)
            return best[0]

        q, row["reference_cpu"], row["reference_wall"] = timed(run_reference)
        row["reference_accuracy"] = accuracy(q)
    plain, row["plain_cpu"], row["plain_wall"] = timed(
        lambda: bayes_fit(data, restarts=10, accelerate=False))
    fit, row["cpu"], row["wall"] = timed(lambda: bayes_fit(data, restarts=10))
    row.update(accuracy=accuracy(fit.q), plain_accuracy=accuracy(plain.q))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", help="the authors' ebcc_vb, as a Python file")
    parser.add_argument("--sets", default=",".join(FACTS))
    parser.add_argument("--json", help="also write the rows here")
    options = parser.parse_args()
    reference = None
    if options.reference:
        spec = importlib.util.spec_from_file_location("ebcc_reference", options.reference)
        reference = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reference)
    rows = []
    if reference is not None:
        print("| set | reference CPU s | ours CPU s, plain | ours CPU s | CPU ratio | "
              "reference wall s | ours wall s | accuracy, reference / ours |")
        print("|---|---|---|---|---|---|---|---|")
    else:
        print("| set | CROWD_FACTS reference wall s | ours wall s, plain | ours wall s | ratio |")
        print("|---|---|---|---|---|")
    for name in options.sets.split(","):
        row = measure(name, reference)
        rows.append(row)
        if reference is not None:
            print(f"| {name} | {row['reference_cpu']:.2f} | {row['plain_cpu']:.2f} | "
                  f"{row['cpu']:.2f} | {row['reference_cpu'] / row['cpu']:.1f}× | "
                  f"{row['reference_wall']:.2f} | {row['wall']:.2f} | "
                  f"{row['reference_accuracy']:.4f} / {row['accuracy']:.4f} |", flush=True)
        else:
            print(f"| {name} | {FACTS.get(name, float('nan')):.1f} | {row['plain_wall']:.2f} | "
                  f"{row['wall']:.2f} | {FACTS.get(name, float('nan')) / row['wall']:.1f}× |",
                  flush=True)
    if reference is not None:
        total = {k: sum(r[k] for r in rows) for k in ("reference_cpu", "plain_cpu", "cpu",
                                                      "reference_wall", "wall")}
        print(f"| **total** | {total['reference_cpu']:.2f} | {total['plain_cpu']:.2f} | "
              f"{total['cpu']:.2f} | **{total['reference_cpu'] / total['cpu']:.1f}×** | "
              f"{total['reference_wall']:.2f} | {total['wall']:.2f} | |")
    else:
        facts = sum(FACTS.get(r["set"], 0.0) for r in rows)
        plain = sum(r["plain_wall"] for r in rows)
        wall = sum(r["wall"] for r in rows)
        print(f"| **total** | {facts:.1f} | {plain:.2f} | {wall:.2f} | **{facts / wall:.1f}×** |")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    if options.json:
        with open(options.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
