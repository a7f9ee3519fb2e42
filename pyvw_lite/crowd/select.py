"""``--method auto``: choose an aggregation method per dataset without truth labels.

The criterion is how well each method predicts answers it has not seen: the answers are split
into ``folds`` seeded folds; for each fold every candidate is fitted on the other answers and
scores the held-out ones by their predictive log-probability

    log P(x_iw) = log sum_k P(z_i = k | the item's other answers) P(w answers x | class k)

with each method's own worker model (majority vote: one confusion matrix shared by every
worker; one-coin: an accuracy per worker; EM: a confusion matrix per worker; BCC and EBCC: the
posterior mean of each worker's answer distribution for each class and subtype).  The method
with the highest mean held-out log-probability per answer wins, unless a simpler one (in the
order majority, one-coin, EM, BCC, EBCC) is within one standard error of it
(:func:`choose_from`); the chosen method is then fitted on all answers.  A richer model only
wins where its extra parameters predict new answers clearly better, which is what a truth-free
choice can check; the summary prints every candidate's figure.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..io.crowd_input import CrowdData, keep_answers
from . import baselines
from .bayes import EBCC_DEFAULTS, bayes_fit

CANDIDATES = ("majority", "one_coin", "em", "bcc", "ebcc")


def _class_answer_counts(data: CrowdData, q: np.ndarray) -> np.ndarray:
    """sum over answers of P(class k) for each answered label l: K x K."""
    item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    counts = np.zeros((data.n_labels, data.n_labels))
    np.add.at(counts.T, data.rating_label, q[item])
    return counts


def _predict(name: str, fit: CrowdData, q_or_result, items, workers, labels) -> np.ndarray:
    """P(answer | the fitted method) for held-out (item, worker, label) triples."""
    K = fit.n_labels
    if name in ("bcc", "ebcc"):
        result = q_or_result
        mean = result.worker_dirichlet / result.worker_dirichlet.sum(axis=2, keepdims=True)
        return np.einsum("nc,nc->n", result.rho[items], mean[workers, :, labels])
    q = q_or_result if name != "em" else q_or_result.q
    empty = q.sum(axis=1) <= 0.0  # an item whose every answer is held out: the class shares
    if empty.any():
        q = q.copy()
        q[empty] = q[~empty].mean(axis=0) if (~empty).any() else 1.0 / K
    if name == "majority":
        confusion = _class_answer_counts(fit, q) + 1.0
        confusion /= confusion.sum(axis=1, keepdims=True)
        return np.einsum("nk,nk->n", q[items], confusion[:, labels].T)
    if name == "one_coin":
        item = np.repeat(np.arange(fit.n_items), fit.ratings_per_item())
        hits = np.bincount(fit.rating_worker, weights=q[item, fit.rating_label],
                           minlength=len(fit.worker_names)) + 1.0
        seen = np.bincount(fit.rating_worker, minlength=len(fit.worker_names)) + 2.0
        p = (hits / seen)[workers]
        right = q[items, labels]
        return right * p + (1.0 - right) * (1.0 - p) / (K - 1)
    from .model import confusion
    model = q_or_result.model
    slot_of = model.worker_slots(fit.worker_names, grow=False)  # -1: a worker it never saw
    alpha = np.where((slot_of[workers] >= 0)[:, None, None],
                     model.alpha[np.maximum(slot_of[workers], 0)], model.mu[None])
    conf = confusion(alpha)  # n x K x K
    return np.einsum("nk,nk->n", q[items], conf[np.arange(items.size), :, labels])


def fit_method(name: str, data: CrowdData, ebcc_options: dict | None = None, config=None):
    """(posteriors, what :func:`_predict` needs) of one candidate fitted to ``data``."""
    if name == "majority":
        q = baselines.majority_vote(data)
        return q, q
    if name == "one_coin":
        q, _ = baselines.one_coin_dawid_skene(data)
        return q, q
    if name == "em":
        from .batch import batch_em
        from .model import CrowdConfig
        config = config or CrowdConfig(n_labels=data.n_labels, label_names=data.label_names,
                                       worker_map="exact")
        result = batch_em(data, config)
        return result.q, result
    options = dict(EBCC_DEFAULTS, **(ebcc_options or {}))
    if name == "bcc":
        options.update(subtypes=1, restarts=1)
    result = bayes_fit(data, **options)
    return result.q, result


@dataclass
class Choice:
    method: str
    scores: dict[str, float] = field(default_factory=dict)  # mean held-out log P per answer
    standard_errors: dict[str, float] = field(default_factory=dict)  # of the gap to the best
    best: str = ""  # the highest score (``method`` is the simplest within the rule's reach)


def held_out_log_probabilities(data: CrowdData, candidates=CANDIDATES, folds: int = 5,
                               seed: int = 0, ebcc_options: dict | None = None,
                               config=None) -> dict[str, np.ndarray]:
    """Each candidate's log-probability of every answer, predicted by the candidate fitted
    to the answers of the other folds."""
    if folds < 2:
        raise ValueError("--folds must be at least 2")
    rng = np.random.default_rng(seed)
    fold_of = rng.permutation(data.n_ratings) % folds
    item = np.repeat(np.arange(data.n_items), data.ratings_per_item())
    logs = {name: np.zeros(data.n_ratings) for name in candidates}
    for fold in range(folds):
        held = fold_of == fold
        train = keep_answers(data, ~held)
        for name in candidates:
            _, fitted = fit_method(name, train, ebcc_options, config)
            p = _predict(name, train, fitted, item[held], data.rating_worker[held],
                         data.rating_label[held])
            logs[name][held] = np.log(np.maximum(p, 1e-300))
    return logs


def choose_from(logs: dict[str, np.ndarray], standard_errors: float = 1.0) -> Choice:
    """The simplest candidate (in the order given) whose mean held-out log-probability is
    within ``standard_errors`` standard errors of the best one's: the one-standard-error rule
    of model selection, so a richer model must predict new answers clearly better to be
    chosen (a gap that is within noise goes to the simpler model)."""
    names = list(logs)
    scores = {name: float(values.mean()) for name, values in logs.items()}
    best = max(names, key=lambda name: scores[name])
    errors = {}
    for name in names:
        gap = logs[best] - logs[name]
        errors[name] = float(gap.std() / np.sqrt(max(gap.size, 1)))
    method = next(name for name in names
                  if scores[best] - scores[name] <= standard_errors * errors[name])
    return Choice(method=method, scores=scores, standard_errors=errors, best=best)


def choose_method(data: CrowdData, candidates=CANDIDATES, folds: int = 5, seed: int = 0,
                  standard_errors: float = 1.0, ebcc_options: dict | None = None,
                  config=None) -> Choice:
    """The method ``--method auto`` picks for ``data`` (see the module docstring)."""
    logs = held_out_log_probabilities(data, candidates, folds, seed, ebcc_options, config)
    return choose_from(logs, standard_errors)
