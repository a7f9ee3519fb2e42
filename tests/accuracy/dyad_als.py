"""Batch ALS with biases: the yardstick of the dyadic learner (docs/dyadic.md, issue 41).

Not part of the package: a ridge ALS written for the check.  The model is

    r̂ = μ + b_u + b_i + p_u·q_i

with the penalty λ·(b_u² + |p_u|²) on every row (Koren's biased MF), or, with ``--weighted``,
λ·n_u·(…) (Zhou et al.'s weighted-λ regularisation); ``--bias-lambdas`` gives the biases a λ
of their own (a grid searched with the others).  Each sweep solves every user's ``[b_u, p_u]``
by ridge against the items held fixed, then every item's, all rows in one batched solve.  λ and
the rank are chosen by K-fold cross-validation on the training file only; the chosen model is
refitted on all of it and scored on the test file.

    python tests/accuracy/dyad_als.py TRAIN TEST [--ranks 0,4,8] [--lambdas 3,10,30]
        [--bias-lambdas 1,3,10]

Prints test MSE / RMSE / MAE of the chosen model (predictions clipped to the label range).
"""
from __future__ import annotations

import argparse
import re

import numpy as np

_LINE = re.compile(r"^\s*(\S+)\s[^|]*\|u\s+(\S+)\s*\|m\s+(\S+)")


def read_ratings(path: str):
    """Labels and user/item names of a ``<rating> |u U |m M`` file."""
    labels, users, items = [], [], []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            match = _LINE.match(line)
            if match is None:
                continue
            labels.append(float(match.group(1)))
            users.append(match.group(2))
            items.append(match.group(3))
    return np.array(labels), users, items


def index(names, table):
    """Integer ids of ``names``, new names appended to ``table`` (a dict)."""
    return np.array([table.setdefault(name, len(table)) for name in names], dtype=np.int64)


def _solve_side(rows, cols, resid, n_rows, other, rank, lam, weighted, bias_lam=None):
    """Ridge solution ``[b, p]`` of every row against the fixed other side's ``[1, q]``; the
    bias takes ``bias_lam`` where it is given, ``lam`` otherwise.  All rows at once: the Gram
    matrices are sums of outer products over each row's ratings (sorted, ``np.add.reduceat``)
    and one batched solve."""
    out = np.zeros((n_rows, rank + 1))
    if rows.size == 0:
        return out
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    present, starts, counts = np.unique(sorted_rows, return_index=True, return_counts=True)
    design = np.concatenate([np.ones((cols.size, 1)), other[cols[order], 1:]], axis=1)
    gram = np.add.reduceat(design[:, :, None] * design[:, None, :], starts, axis=0)
    target = np.add.reduceat(design * resid[order][:, None], starts, axis=0)
    ridge = np.full(rank + 1, float(lam))
    if bias_lam is not None:
        ridge[0] = bias_lam
    scale = counts.astype(float) if weighted else np.ones(present.size)
    gram += scale[:, None, None] * np.diag(ridge)[None, :, :]
    out[present] = np.linalg.solve(gram, target[:, :, None])[:, :, 0]
    return out


def fit(users, items, labels, n_users, n_items, rank, lam, sweeps=15, seed=0,
        weighted=False, bias_lam=None):
    """``(mu, U, I)``: rows ``[b, p]`` of users and items after ``sweeps`` alternations
    (``bias_lam``: the biases' λ where it differs from the latent vectors' ``lam``)."""
    rng = np.random.default_rng(seed)
    mu = float(labels.mean())
    U = np.zeros((n_users, rank + 1))
    I = np.zeros((n_items, rank + 1))
    I[:, 1:] = 0.1 * rng.standard_normal((n_items, rank))
    for _ in range(sweeps):
        # users against items: r − μ − b_i = b_u + p_u·q_i
        resid = labels - mu - I[items, 0]
        U = _solve_side(users, items, resid, n_users, I, rank, lam, weighted, bias_lam)
        resid = labels - mu - U[users, 0]
        I = _solve_side(items, users, resid, n_items, U, rank, lam, weighted, bias_lam)
    return mu, U, I


def predict(model, users, items, low=1.0, high=5.0):
    mu, U, I = model
    p = mu + U[users, 0] + I[items, 0] + np.einsum("ij,ij->i", U[users, 1:], I[items, 1:])
    return np.clip(p, low, high)


def cross_validate(users, items, labels, n_users, n_items, ranks, lambdas, folds=5, seed=0,
                   weighted=False, sweeps=15, bias_lambdas=(None,), fold=None):
    """Mean held-out MSE per ``(rank, λ, bias λ)`` over ``folds`` folds of the training data
    (``fold``: each rating's fold, seeded at random when not given; a bias λ of None is λ)."""
    if fold is None:
        fold = np.random.default_rng(seed).integers(0, folds, labels.size)
    low, high = labels.min(), labels.max()
    scores = {}
    for rank in ranks:
        for lam in lambdas:
            for bias_lam in bias_lambdas:
                if rank == 0 and bias_lam is not None and lam != lambdas[0]:
                    continue  # no latent vectors at rank 0: the biases' λ is the only one
                errors = []
                for f in np.unique(fold):
                    train = fold != f
                    model = fit(users[train], items[train], labels[train], n_users, n_items,
                                rank, lam, sweeps, seed, weighted, bias_lam)
                    p = predict(model, users[~train], items[~train], low, high)
                    errors.append(np.mean((p - labels[~train]) ** 2))
                scores[(rank, lam, bias_lam)] = float(np.mean(errors))
    return scores


def tuned_als(train_path, test_path, ranks=(0, 4, 8), lambdas=(3.0, 10.0, 30.0), folds=3,
              weighted=False, sweeps=15, bias_lambdas=(None,)):
    """Tune by CV on ``train_path``, refit, score on ``test_path``: a dict of the figures."""
    y, u_names, i_names = read_ratings(train_path)
    ty, tu_names, ti_names = read_ratings(test_path)
    utab, itab = {}, {}
    u = index(u_names, utab)
    i = index(i_names, itab)
    tu = index(tu_names, utab)
    ti = index(ti_names, itab)
    n_users, n_items = len(utab), len(itab)
    scores = cross_validate(u, i, y, n_users, n_items, ranks, lambdas, folds, 0, weighted,
                            sweeps, bias_lambdas)
    rank, lam, bias_lam = min(scores, key=scores.get)
    model = fit(u, i, y, n_users, n_items, rank, lam, sweeps, 0, weighted, bias_lam)
    p = predict(model, tu, ti, y.min(), y.max())
    mse = float(np.mean((p - ty) ** 2))
    return dict(rank=rank, lam=lam, bias_lam=lam if bias_lam is None else bias_lam,
                cv=scores[(rank, lam, bias_lam)], mse=mse, rmse=mse ** 0.5,
                mae=float(np.mean(np.abs(p - ty))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("train")
    parser.add_argument("test")
    parser.add_argument("--ranks", default="0,4,8")
    parser.add_argument("--lambdas", default="3,10,30")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--sweeps", type=int, default=15)
    parser.add_argument("--weighted", action="store_true", help="λ·n per row (ALS-WR)")
    parser.add_argument("--bias-lambdas", default="",
                        help="the biases' own λ grid (default: the biases take λ)")
    args = parser.parse_args()
    bias_lambdas = [float(x) for x in args.bias_lambdas.split(",")] if args.bias_lambdas \
        else [None]
    result = tuned_als(args.train, args.test, [int(x) for x in args.ranks.split(",")],
                       [float(x) for x in args.lambdas.split(",")], args.folds, args.weighted,
                       args.sweeps, bias_lambdas)
    print("ALS rank {rank} lambda {lam:g} bias lambda {bias_lam:g} (cv {cv:.4f}): test MSE {mse:.4f} RMSE {rmse:.4f} "
          "MAE {mae:.4f}".format(**result))


if __name__ == "__main__":
    main()
