"""The baselines users compare against: majority vote and one-coin Dawid-Skene.

Both read the same :class:`~pyvw_lite.io.crowd_input.CrowdData` arrays as the EM of §E and return
posteriors (items x K).  Gold items are one-hot.  Majority vote breaks a tie among all-different
answers by a pooled confusion matrix (see :func:`majority_vote`).
"""
from __future__ import annotations

import math

import numpy as np

from ..io.crowd_input import CrowdData
from ..jit import kernel
from .kernels import softmax_into

TIE_RULES = ("confusion", "lowest")
TIE_MARGIN = 1e-9  # added to a tie's winner's share, so that the posterior's argmax names it


@kernel
def _pooled_log_confusion(item_start, rating_label, K):
    """log P(plurality label k) + log P(answer l | plurality label k) in row k, pooled over all
    workers and counted on the items with a single most frequent label (one pseudo-count per
    cell and per class); column K holds the log prior."""
    counts = np.ones((K, K))
    prior = np.ones(K)
    votes = np.zeros(K)
    for i in range(item_start.size - 1):
        votes[:] = 0.0
        for r in range(item_start[i], item_start[i + 1]):
            votes[rating_label[r]] += 1.0
        top = votes.max()
        best = -1
        for k in range(K):
            if votes[k] == top:
                best = k if best < 0 else K  # K: a tie
        if top == 0.0 or best == K:
            continue
        prior[best] += 1.0
        for k in range(K):
            counts[best, k] += votes[k]
    out = np.empty((K, K + 1))
    for k in range(K):
        total = counts[k].sum()
        for l in range(K):
            out[k, l] = math.log(counts[k, l] / total)
        out[k, K] = math.log(prior[k] / prior.sum())
    return out


@kernel
def _vote_shares(item_start, rating_label, gold, K, log_confusion):
    """Each label's share of an item's answers; a tie's winner gets ``TIE_MARGIN`` more (see
    :func:`majority_vote`)."""
    q = np.zeros((item_start.size - 1, K))
    for i in range(item_start.size - 1):
        if gold[i] >= 0:
            q[i, gold[i]] = 1.0
            continue
        n = item_start[i + 1] - item_start[i]
        if n == 0:
            continue
        for r in range(item_start[i], item_start[i + 1]):
            q[i, rating_label[r]] += 1.0
        top = q[i].max()
        tied = 0
        best = -1
        for k in range(K):
            if q[i, k] == top:
                tied += 1
                best = k if best < 0 else best
        if top == 1.0 and tied >= 3 and log_confusion.shape[0] == K:
            score_best = -np.inf
            for k in range(K):  # every answered label is tied here
                if q[i, k] == 0.0:
                    continue
                score = log_confusion[k, K]
                for l in range(K):
                    score += q[i, l] * log_confusion[k, l]
                if score > score_best:
                    score_best = score
                    best = k
        for k in range(K):
            q[i, k] /= n
        if tied > 1:
            q[i, best] += TIE_MARGIN
    return q


def majority_vote(data: CrowdData, ties: str = "confusion") -> np.ndarray:
    """Share of each label among an item's answers.

    Ties, with ``ties="confusion"``: where three or more answers all differ, the tie goes to
    the answered label of highest posterior under one confusion matrix and class prior pooled
    over all workers (how often each plurality label occurs and each answer comes with it,
    counted on the items with a single plurality); any other tie (two or more labels with two
    or more answers each, or two answers that differ) goes to the lowest label, as every tie
    does with ``ties="lowest"``.  The winner's share is raised by ``TIE_MARGIN``, so
    ``argmax`` names it.
    """
    if ties not in TIE_RULES:
        raise ValueError(f"ties must be one of {', '.join(TIE_RULES)}, not {ties!r}")
    K = data.n_labels
    log_confusion = (_pooled_log_confusion(data.item_start, data.rating_label, K)
                     if ties == "confusion" else np.zeros((0, 0)))
    return _vote_shares(data.item_start, data.rating_label, data.gold, K, log_confusion)


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
