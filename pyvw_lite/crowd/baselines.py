"""The baselines users compare against: majority vote and one-coin Dawid-Skene.

Both read the same :class:`~pyvw_lite.io.crowd_input.CrowdData` arrays as the EM of §E and return
posteriors (items x K).  Gold items are one-hot.  Ties go to the lowest label index.
"""
from __future__ import annotations

import math

import numpy as np

from ..io.crowd_input import CrowdData
from ..jit import kernel
from .kernels import softmax_into


@kernel
def _vote_shares(item_start, rating_label, gold, K):
    q = np.zeros((item_start.size - 1, K))
    for i in range(item_start.size - 1):
        if gold[i] >= 0:
            q[i, gold[i]] = 1.0
            continue
        n = item_start[i + 1] - item_start[i]
        for r in range(item_start[i], item_start[i + 1]):
            q[i, rating_label[r]] += 1.0 / n
    return q


def majority_vote(data: CrowdData) -> np.ndarray:
    """Share of each label among an item's answers."""
    return _vote_shares(data.item_start, data.rating_label, data.gold, data.n_labels)


@kernel
def _one_coin(item_start, rating_worker, rating_label, gold, K, n_workers, q, max_iters, tol):
    """EM for 'worker w answers the truth with probability p_w, else uniformly among the rest'.

    Accuracies with one pseudo-hit and one pseudo-miss (the MAP under a Beta(2, 2) prior) and
    add-one class priors keep every logarithm finite.
    Returns the number of iterations.
    """
    n_items = item_start.size - 1
    accuracy = np.empty(n_workers)
    prior = np.empty(K)
    hits = np.empty(n_workers)
    seen = np.empty(n_workers)
    log_q = np.empty(K)
    iterations = 0
    for iterations in range(1, max_iters + 1):
        hits[:] = 1.0
        seen[:] = 2.0
        prior[:] = 1.0
        for i in range(n_items):
            for k in range(K):
                prior[k] += q[i, k]
            for r in range(item_start[i], item_start[i + 1]):
                w = rating_worker[r]
                hits[w] += q[i, rating_label[r]]
                seen[w] += 1.0
        for w in range(n_workers):
            accuracy[w] = hits[w] / seen[w]
        total = prior.sum()
        for k in range(K):
            prior[k] = math.log(prior[k] / total)
        change = 0.0
        for i in range(n_items):
            if gold[i] >= 0:
                continue
            for k in range(K):
                log_q[k] = prior[k]
            for r in range(item_start[i], item_start[i + 1]):
                w = rating_worker[r]
                right = math.log(accuracy[w])
                wrong = math.log((1.0 - accuracy[w]) / (K - 1))
                for k in range(K):
                    log_q[k] += right if k == rating_label[r] else wrong
            softmax_into(log_q, log_q)
            for k in range(K):
                change = max(change, abs(log_q[k] - q[i, k]))
                q[i, k] = log_q[k]
        if change < tol:
            break
    return iterations


def one_coin_dawid_skene(data: CrowdData, max_iters: int = 100, tol: float = 1e-7):
    """Posteriors and iteration count, starting from the majority vote."""
    if data.n_labels < 2:  # a wrong answer would have no label to be
        raise ValueError(f"one-coin Dawid-Skene needs at least 2 labels, got {data.n_labels}")
    q = majority_vote(data)
    iterations = _one_coin(data.item_start, data.rating_worker, data.rating_label, data.gold,
                           data.n_labels, len(data.worker_names), q, max_iters, tol)
    return q, iterations
