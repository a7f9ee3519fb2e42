"""Why BCC and EM lose to majority vote on six real crowd sets, and what a model that wins does.

    python tests/accuracy/crowd_diagnosis.py [--shared DIR] [--sets a,b,...] [--out FILE]

For each set: the class shares four ways (the truth, all answers, majority vote's labels, the
class prior each model fits), each method's accuracy and recall per true class, the items where
BCC and one-coin flip majority vote's label (how many the flip made right and wrong, by true
class), the workers behind BCC's wrong flips (their answers, their accuracy against the truth,
the confusion matrix BCC fitted and the one the truth shows), and how far each model's fitted
worker matrices are from the ones the truth shows.  Prints markdown; pytest does not collect it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.dirname(HERE))

from crowd_shared import SHARED  # noqa: E402
from pyvw_lite.crowd import baselines  # noqa: E402
from pyvw_lite.crowd.batch import batch_em  # noqa: E402
from pyvw_lite.crowd.bayes import bayes_fit  # noqa: E402
from pyvw_lite.crowd.model import CrowdConfig  # noqa: E402
from pyvw_lite.io.crowd_input import known_labels, read_answers, read_gold  # noqa: E402

SIX = ("act_ZenCrowd_all", "act_ZenCrowd_in", "act_ZenCrowd_us", "cubam_ducks",
       "s5_AdultContent", "crowdscale13_fact_eval")


def _shares(values, K):
    counts = np.bincount(values, minlength=K).astype(float)
    return counts / max(counts.sum(), 1.0)


def _fmt(vector):
    return "[" + ", ".join(f"{v:.2f}" for v in vector) + "]"


def _true_confusion(data, known, K):
    """Each worker's confusion matrix on the items with truth (rows: true class), counts."""
    item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    keep = known[item] >= 0
    counts = np.zeros((len(data.worker_names), K, K))
    np.add.at(counts, (data.rating_worker[keep], known[item[keep]], data.rating_label[keep]), 1)
    return counts


def _fitted_confusions(data, fits, K):
    """Worker x K x K row-normalised matrices each model implies."""
    W = len(data.worker_names)
    out = {"bcc": fits["bcc"].confusion(), "ebcc": fits["ebcc"].confusion()}
    accuracy = _one_coin_accuracy(data, fits["one_coin"], K)
    off = (1 - accuracy) / max(K - 1, 1)
    one = np.repeat(off[:, None, None], K, axis=1).repeat(K, axis=2)
    one[:, np.arange(K), np.arange(K)] = accuracy[:, None]
    out["one_coin"] = one
    # majority vote: every worker the same, the pooled confusion against the vote's shares
    item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    pooled = np.zeros((K, K))
    np.add.at(pooled, (slice(None), data.rating_label),
              fits["majority"][item].T)
    pooled /= np.maximum(pooled.sum(axis=1, keepdims=True), 1e-12)
    out["majority"] = np.broadcast_to(pooled, (W, K, K))
    return out


def _one_coin_accuracy(data, q, K):
    """One-coin's fitted accuracies at its posteriors (its own M-step, Beta(2, 2) MAP)."""
    item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    hits = np.bincount(data.rating_worker, weights=q[item, data.rating_label],
                       minlength=len(data.worker_names)) + 1.0
    seen = np.bincount(data.rating_worker, minlength=len(data.worker_names)) + 2.0
    return hits / seen


def fit_all(data):
    K = data.n_labels
    config = CrowdConfig(n_labels=K, label_names=data.label_names, worker_map="exact")
    return {"majority": baselines.majority_vote(data),
            "one_coin": baselines.one_coin_dawid_skene(data)[0],
            "em": batch_em(data, config).q,
            "bcc": bayes_fit(data, subtypes=1, restarts=1),
            "ebcc": bayes_fit(data, restarts=10)}


def posteriors(fits):
    return {m: (f.q if hasattr(f, "q") else f) for m, f in fits.items()}


def diagnose(name, shared, out):
    data = read_answers(os.path.join(shared, name, "answers.csv"))
    known = known_labels(data, read_gold(os.path.join(shared, name, "truth.csv")), "truth")
    K = data.n_labels
    scored = known >= 0
    fits = fit_all(data)
    q = posteriors(fits)
    labels = {m: v.argmax(axis=1) for m, v in q.items()}
    per_worker = np.bincount(data.rating_worker, minlength=len(data.worker_names))
    w = out.append
    w(f"\n### {name}\n")
    w(f"{data.n_items:,} tasks ({int(scored.sum()):,} with truth), {len(data.worker_names):,} "
      f"workers, {data.n_ratings:,} answers, K = {K} ({', '.join(data.label_names)}); answers "
      f"per worker: median {np.median(per_worker):g}, max {per_worker.max():,}.\n")
    w("| class shares | " + " | ".join(data.label_names) + " |")
    w("|---" * (K + 1) + "|")
    rows = [("truth (tasks with truth)", _shares(known[scored], K)),
            ("all answers", _shares(data.rating_label, K)),
            ("majority vote's labels", _shares(labels["majority"], K)),
            ("BCC's fitted class prior", fits["bcc"].class_dirichlet
             / fits["bcc"].class_dirichlet.sum()),
            ("EBCC's fitted class prior", fits["ebcc"].class_dirichlet
             / fits["ebcc"].class_dirichlet.sum()),
            ("one-coin's labels", _shares(labels["one_coin"], K))]
    for title, shares in rows:
        w(f"| {title} | " + " | ".join(f"{s:.3f}" for s in shares) + " |")
    w("\n| method | accuracy | " + " | ".join(f"recall of {n}" for n in data.label_names)
      + " |")
    w("|---" * (K + 2) + "|")
    for m, lab in labels.items():
        recall = [float((lab[scored & (known == k)] == k).mean()) if (known == k).any()
                  else float("nan") for k in range(K)]
        w(f"| {m} | {(lab[scored] == known[scored]).mean():.4f} | "
          + " | ".join(f"{r:.3f}" for r in recall) + " |")
    w("\n| flips against majority vote (tasks with truth) | flipped | made right | made wrong |"
      " wrong flips by true class |")
    w("|---|---|---|---|---|")
    for m in ("bcc", "ebcc", "one_coin", "em"):
        flip = scored & (labels[m] != labels["majority"])
        right = flip & (labels[m] == known)
        wrong = flip & (labels["majority"] == known)
        by_class = np.bincount(known[wrong], minlength=K)
        w(f"| {m} | {int(flip.sum())} | {int(right.sum())} | {int(wrong.sum())} | "
          + ", ".join(f"{n} {c}" for n, c in zip(data.label_names, by_class)) + " |")
    # workers behind BCC's wrong flips: whose answers agree with BCC's label there
    item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    wrong = scored & (labels["bcc"] != labels["majority"]) & (labels["majority"] == known)
    backing = wrong[item] & (data.rating_label == labels["bcc"][item])
    blame = np.bincount(data.rating_worker[backing], minlength=len(data.worker_names))
    truth_counts = _true_confusion(data, known, K)
    fitted = _fitted_confusions(data, fits, K)
    total_true = truth_counts.sum(axis=2)
    w("\nWorkers whose answers carried BCC's wrong flips (the five with most such answers):\n")
    w("| worker | answers | answers behind wrong flips | accuracy vs truth | BCC's fitted "
      "matrix (rows: true class) | the truth's matrix | one-coin's accuracy |")
    w("|---|---|---|---|---|---|---|")
    one_acc = _one_coin_accuracy(data, q["one_coin"], K)
    for v in np.argsort(-blame)[:5]:
        if blame[v] == 0:
            break
        tc = truth_counts[v]
        acc = np.trace(tc) / max(tc.sum(), 1)
        true_m = tc / np.maximum(tc.sum(axis=1, keepdims=True), 1)
        w(f"| {data.worker_names[v][:14]} | {per_worker[v]} | {blame[v]} | {acc:.3f} | "
          + " ".join(_fmt(r) for r in fitted["bcc"][v]) + " | "
          + " ".join(_fmt(r) for r in true_m) + f" | {one_acc[v]:.3f} |")
    # how far each model's matrices are from the truth's, weighted by answers on truth items
    w("\nHow well each model's worker matrices match the ones the truth shows (mean absolute "
      "error per cell, over the rows a worker answered on truth items, weighted by answers):\n")
    w("| model | all rows | " + " | ".join(f"row {n}" for n in data.label_names) + " |")
    w("|---" * (K + 2) + "|")
    true_rows = truth_counts / np.maximum(total_true[:, :, None], 1)
    for m, mats in fitted.items():
        err = np.abs(mats - true_rows).mean(axis=2)  # W x K
        weight = total_true
        per_row = [float((err[:, k] * weight[:, k]).sum() / max(weight[:, k].sum(), 1))
                   for k in range(K)]
        overall = float((err * weight).sum() / max(weight.sum(), 1))
        w(f"| {m} | {overall:.3f} | " + " | ".join(f"{e:.3f}" for e in per_row) + " |")
    if K == 2:
        _binary_bias(data, known, fitted, truth_counts, out)
    # one line for the summary: where BCC's wrong flips go, and that class's shares
    toward = np.bincount(labels["bcc"][wrong], minlength=K)
    target = int(toward.argmax())
    bcc_prior = fits["bcc"].class_dirichlet / fits["bcc"].class_dirichlet.sum()
    return dict(accuracy={m: float((lab[scored] == known[scored]).mean())
                          for m, lab in labels.items()},
                flips_right=int((scored & (labels["bcc"] != labels["majority"])
                                 & (labels["bcc"] == known)).sum()),
                flips_wrong=int(wrong.sum()), target=data.label_names[target],
                target_share_of_wrong=float(toward[target] / max(toward.sum(), 1)),
                truth_share=float(_shares(known[scored], K)[target]),
                answer_share=float(_shares(data.rating_label, K)[target]),
                vote_share=float(_shares(labels["majority"], K)[target]),
                bcc_prior=float(bcc_prior[target]),
                median_answers=float(np.median(per_worker)))


def _binary_bias(data, known, fitted, truth_counts, out):
    """On two classes: the answer-weighted mean false-positive and false-negative rates the
    truth shows and each model fits (label 1 is 'positive')."""
    w = out.append
    n0 = truth_counts[:, 0, :].sum(axis=1)
    n1 = truth_counts[:, 1, :].sum(axis=1)
    fp_true = truth_counts[:, 0, 1].sum() / max(n0.sum(), 1)
    fn_true = truth_counts[:, 1, 0].sum() / max(n1.sum(), 1)
    w("\nFalse-positive (true 0 answered 1) and false-negative rates, averaged over answers on "
      "truth items:\n")
    w("| | false positives | false negatives |")
    w("|---|---|---|")
    w(f"| the truth | {fp_true:.3f} | {fn_true:.3f} |")
    for m, mats in fitted.items():
        fp = float((mats[:, 0, 1] * n0).sum() / max(n0.sum(), 1))
        fn = float((mats[:, 1, 0] * n1).sum() / max(n1.sum(), 1))
        w(f"| {m} | {fp:.3f} | {fn:.3f} |")


def summary_table(summary: dict) -> str:
    lines = ["| set | majority | one-coin | BCC | EBCC | BCC's flips of the vote: right / wrong "
             "| wrong flips toward | that class in the truth | in the answers | in the vote | "
             "BCC's class prior |", "|---" * 11 + "|"]
    for name, r in summary.items():
        a = r["accuracy"]
        lines.append(f"| {name} | {a['majority']:.4f} | {a['one_coin']:.4f} | {a['bcc']:.4f} | "
                     f"{a['ebcc']:.4f} | {r['flips_right']} / {r['flips_wrong']} | "
                     f"{r['target']} ({r['target_share_of_wrong']:.0%}) | {r['truth_share']:.3f} "
                     f"| {r['answer_share']:.3f} | {r['vote_share']:.3f} | {r['bcc_prior']:.3f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default=str(SHARED))
    parser.add_argument("--sets", default=",".join(SIX))
    parser.add_argument("--out", default=None, help="also write the markdown here")
    parser.add_argument("--json", default=None, help="write each set's summary here")
    options = parser.parse_args()
    out: list[str] = []
    summary = {}
    for name in options.sets.split(","):
        printed = len(out)
        summary[name] = diagnose(name, options.shared, out)
        print("\n".join(out[printed:]), flush=True)
    out += ["", "### Summary", "", summary_table(summary)]
    print("\n".join(out[-4:]))
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(summary, handle, indent=1)
    if options.out:
        with open(options.out, "w") as handle:
            handle.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
