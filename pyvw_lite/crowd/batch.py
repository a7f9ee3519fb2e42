"""Batch MAP-EM over all items at once (SPEC §E.3): block-coordinate ascent, F never decreases.

Each iteration is an item pass (E-step, and with the difficulty model a b-step and a second
E-step), one Newton step with backtracking per worker slot, the closed-form hypermean step and,
with ``--learn_priorz``, a Newton step on the class-prior logits.

Difficulty warm start: while every item's difficulty sits at its prior mode ``kappa`` the worker
step only needs per-(slot, label) sums of the posteriors, so the first phase runs with the b-steps
off until F settles, and only then turns them on.  Skipping a block is still coordinate ascent,
so F stays monotone and the end point is a stationary point of the full objective.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..io.crowd_input import CrowdData
from ..jit import announce_compile
from . import kernels
from .model import CrowdConfig, CrowdModel

PHASE_FIXED = "fixed"  # no difficulty model (sigma_b = 0)
PHASE_WARM = "warm"  # difficulty model, b-steps not yet on
PHASE_FULL = "full"


@dataclass
class BatchResult:
    model: CrowdModel
    q: np.ndarray  # posteriors, items x K
    b: np.ndarray  # log difficulty scale of each item
    objective: list[float] = field(default_factory=list)  # F after each item pass
    iterations: int = 0
    converged: bool = False
    seconds: float = 0.0
    used_slots: int = 0

    @property
    def labels(self) -> np.ndarray:
        return self.q.argmax(axis=1)


def _theta_step(theta: np.ndarray, counts: np.ndarray, n_free: int, base: np.ndarray) -> None:
    """Newton with backtracking on sum_i q_i log softmax(theta) - |theta - log pi|^2 / 2."""
    def value(th):
        top = th.max()
        lse = top + math.log(np.exp(th - top).sum())
        return float(counts @ th - n_free * lse - 0.5 * ((th - base) ** 2).sum())

    for _ in range(20):
        soft = np.exp(theta - theta.max())
        soft /= soft.sum()
        grad = counts - n_free * soft - (theta - base)
        hess = n_free * (np.diag(soft) - np.outer(soft, soft)) + np.eye(theta.size)
        step = np.linalg.solve(hess, grad)
        current = value(theta)
        scale = 1.0
        while scale > 1e-12 and value(theta + scale * step) < current:
            scale *= 0.5
        if scale <= 1e-12:
            return
        theta += scale * step
        if np.abs(scale * step).max() < 1e-12:
            return


def _log_softmax(theta: np.ndarray) -> np.ndarray:
    top = theta.max()
    return theta - top - math.log(np.exp(theta - top).sum())


def batch_em(data: CrowdData, config: CrowdConfig, *, max_iters: int = 200, tol: float = 1e-8,
             report=None) -> BatchResult:
    """Fit the model of SPEC §E.1 to all of ``data``; ``report(iteration, F, phase, q)`` per pass."""
    started = time.perf_counter()
    K = config.n_labels
    if config.worker_map == "exact":
        model = CrowdModel(config, n_slots=max(len(data.worker_names), 1))
    else:
        model = CrowdModel(config)
    rating_slot = model.slots_for(data)
    M = model.n_slots
    announce_compile(kernels.batch_items, kernels.alpha_step)
    cell_param, param_k, param_l = model.layout
    counts = np.bincount(rating_slot, minlength=M)
    used = counts > 0
    slot_rating = np.argsort(rating_slot, kind="stable")
    obs_start = np.zeros(M + 1, dtype=np.int64)
    np.cumsum(counts, out=obs_start[1:])
    rating_item = np.repeat(np.arange(data.n_items, dtype=np.int64), data.ratings_per_item())
    rating_label = data.rating_label
    # the compressed observations of the fixed-difficulty phases: one per (used slot, label)
    used_ids = np.flatnonzero(used)
    compressed_start = np.zeros(M + 1, dtype=np.int64)
    compressed_start[1:] = np.cumsum(np.where(used, K, 0))
    compressed_row = (used_ids[:, None] * K + np.arange(K)[None, :]).ravel().astype(np.int64)
    compressed_label = np.tile(np.arange(K, dtype=np.int64), used_ids.size)
    fixed_beta = np.full(M * K, math.exp(config.kappa))
    # the per-rating observations of the full phase, by slot
    full_row = rating_item[slot_rating]
    full_label = rating_label[slot_rating]

    symmetric = config.symmetric
    gold = data.gold
    base_log_prior = config.log_priorz
    theta = base_log_prior.copy()
    log_prior = _log_softmax(theta)
    free = gold < 0
    q = np.zeros((data.n_items, K))
    b = np.full(data.n_items, config.kappa, dtype=np.float64)
    phase = PHASE_FIXED if config.sigma_b == 0.0 else PHASE_WARM
    result = BatchResult(model=model, q=q, b=b, used_slots=int(used.sum()))
    previous = None
    for iteration in range(1, max_iters + 1):
        if phase == PHASE_FULL:
            items = kernels.batch_items(model.alpha, data.item_start, rating_slot, rating_label,
                                        K, log_prior, gold, b, config.kappa, config.sigma_b, q)
        else:
            table = kernels.log_likelihood_table(model.alpha, math.exp(config.kappa))
            items = kernels.batch_items_fixed_beta(table, data.item_start, rating_slot,
                                                   rating_label, K, log_prior, gold, 0.0, q)
        objective = items + kernels.prior_log_density(model.alpha, model.mu, model.nu, used,
                                                      param_k, param_l, config.sigma_alpha,
                                                      config.sigma_mu)
        if config.learn_priorz:
            objective -= 0.5 * float(((theta - base_log_prior) ** 2).sum())
        result.objective.append(objective)
        result.iterations = iteration
        if report is not None:
            report(iteration, objective, phase, q)
        previous, settled = objective, previous is not None and abs(objective - previous) <= tol * abs(objective)
        if settled:
            if phase != PHASE_WARM:
                result.converged = True
                break
            phase = PHASE_FULL
            previous = None  # the first full pass starts where the warm phase stopped
        if phase == PHASE_FULL:
            kernels.alpha_step(model.alpha, model.mu, obs_start, full_row, full_label, q,
                               np.exp(b), cell_param, param_k, param_l, symmetric,
                               config.sigma_alpha, 1)
        else:
            weights = kernels.label_counts(M, obs_start, slot_rating, rating_item, rating_label,
                                           q, K)
            kernels.alpha_step(model.alpha, model.mu, compressed_start, compressed_row,
                               compressed_label, weights, fixed_beta, cell_param, param_k,
                               param_l, symmetric, config.sigma_alpha, 20)
        _hypermean_step(model, used)
        if config.learn_priorz:
            _theta_step(theta, q[free].sum(axis=0), int(free.sum()), base_log_prior)
            log_prior = _log_softmax(theta)
    model.theta = theta
    model.t = data.n_items
    result.seconds = time.perf_counter() - started
    return result


def _hypermean_step(model: CrowdModel, used: np.ndarray) -> None:
    """SPEC §E.3 step 3 over the used slots; slots without data take the new mu."""
    c = model.config
    if c.sigma_mu > 0.0:
        inv_alpha = 1.0 / c.sigma_alpha ** 2
        inv_mu = 1.0 / c.sigma_mu ** 2
        total = model.alpha[used].sum(axis=0)
        model.mu = (model.nu * inv_mu + total * inv_alpha) / (inv_mu + used.sum() * inv_alpha)
    if not used.all():
        model.alpha[~used] = model.mu
