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

import numba
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


class BatchFit:
    """The arrays of one batch fit and its two half-steps: ``e_step`` (item pass, returns F) and
    ``m_step`` (workers, hypermean, class prior)."""

    def __init__(self, data: CrowdData, config: CrowdConfig):
        self.data = data
        self.config = config
        K = self.K = config.n_labels
        if config.worker_map == "exact":
            self.model = CrowdModel(config, n_slots=max(len(data.worker_names), 1))
        else:
            self.model = CrowdModel(config)
        self.rating_slot = self.model.slots_for(data)
        M = self.model.n_slots
        counts = np.bincount(self.rating_slot, minlength=M)
        self.used = counts > 0
        self.rating_row = self.rating_slot * K + data.rating_label  # (slot, answer) rows
        if config.sigma_b > 0.0:  # per-rating observations by slot, for the difficulty model
            slot_rating = np.argsort(self.rating_slot, kind="stable")
            self.obs_start = np.zeros(M + 1, dtype=np.int64)
            np.cumsum(counts, out=self.obs_start[1:])
            rating_item = np.repeat(np.arange(data.n_items, dtype=np.int64),
                                    data.ratings_per_item())
            self.full_row = rating_item[slot_rating]
            self.full_label = data.rating_label[slot_rating]
        # one observation per (used slot, answer) when every beta is equal (--symmetric)
        used_ids = np.flatnonzero(self.used)
        self.compressed_start = np.zeros(M + 1, dtype=np.int64)
        self.compressed_start[1:] = np.cumsum(np.where(self.used, K, 0))
        self.compressed_row = (used_ids[:, None] * K + np.arange(K)).ravel().astype(np.int64)
        self.compressed_label = np.tile(np.arange(K, dtype=np.int64), used_ids.size)
        self.fixed_beta = np.full(M * K, math.exp(config.kappa))
        self.theta = config.log_priorz.copy()
        self.log_prior = _log_softmax(self.theta)
        self.free = data.gold < 0
        self.n_free = int(self.free.sum())
        self.q = np.zeros((data.n_items, K))
        self.b = np.full(data.n_items, config.kappa, dtype=np.float64)
        self.label_sums = None
        self.class_mass = np.zeros(K)  # summed posteriors of the items without gold
        self.chunks = max(1, min(numba.get_num_threads(), data.n_items // 10_000))

    def e_step(self, with_difficulty: bool) -> float:
        """Posteriors (and with the difficulty model, each item's b) at the current workers;
        returns the objective F there."""
        model, data, c = self.model, self.data, self.config
        if with_difficulty:
            items = kernels.batch_items(model.alpha, data.item_start, self.rating_slot,
                                        data.rating_label, self.K, self.log_prior, data.gold,
                                        self.b, c.kappa, c.sigma_b, self.q)
        else:
            items = self.fixed_items_pass()
        return self.objective(items)

    def fixed_items_pass(self) -> float:
        """E-step of every item with beta = e^kappa; keeps the answer sums and class mass."""
        table = kernels.log_likelihood_table(self.model.alpha, math.exp(self.config.kappa))
        items, self.label_sums, self.class_mass = kernels.batch_items_fixed_beta(
            table.reshape(-1, self.K), self.data.item_start, self.rating_row, self.K,
            self.log_prior, self.data.gold, 0.0, self.q, self.chunks)
        return items

    def finish(self) -> None:
        """Posteriors at the final parameters are in ``q`` already (a sharded fit gathers them)."""

    def objective(self, items: float) -> float:
        """F: the items' part plus the log priors of the worker, hypermean and class-prior
        parameters (SPEC §E.2)."""
        model, c = self.model, self.config
        _, param_k, param_l = model.layout
        objective = items + kernels.prior_log_density(model.alpha, model.mu, model.nu, self.used,
                                                      param_k, param_l, c.sigma_alpha, c.sigma_mu)
        if c.learn_priorz:
            objective -= 0.5 * float(((self.theta - c.log_priorz) ** 2).sum())
        return objective

    def m_step(self, with_difficulty: bool) -> None:
        model, c = self.model, self.config
        cell_param, param_k, param_l = model.layout
        if with_difficulty:
            kernels.alpha_step(model.alpha, model.mu, self.obs_start, self.full_row,
                               self.full_label, self.q, np.exp(self.b), cell_param, param_k,
                               param_l, c.symmetric, c.sigma_alpha, 1)
        elif not c.symmetric:
            K = model.alpha.shape[1]  # label_sums[m * K + l, k] is [m, l, k] of this view
            kernels.alpha_rows_step(model.alpha, model.mu, self.label_sums.reshape(-1, K, K),
                                    self.used, math.exp(c.kappa), c.sigma_alpha, 2, False)
        else:
            kernels.alpha_step(model.alpha, model.mu, self.compressed_start, self.compressed_row,
                               self.compressed_label, self.label_sums, self.fixed_beta,
                               cell_param, param_k, param_l, True, c.sigma_alpha, 20)
        hypermean_step(model, self.used)
        if c.learn_priorz:
            mass = self.class_mass if not with_difficulty else self.q[self.free].sum(axis=0)
            _theta_step(self.theta, mass, self.n_free, c.log_priorz)
            self.log_prior = _log_softmax(self.theta)


def batch_em(data: CrowdData, config: CrowdConfig, *, max_iters: int = 200, tol: float = 1e-6,
             report=None, fit: BatchFit | None = None) -> BatchResult:
    """Fit the model of SPEC §E.1 to all of ``data``; ``report(iteration, F, phase, q)`` after
    each item pass.  Stops when F changes by less than ``tol`` relative (SPEC §E.3 says 1e-8;
    from 1e-6 on the labels of the shared crowd sets no longer move) or after ``max_iters``
    item passes."""
    started = time.perf_counter()
    announce_compile(kernels.batch_items_fixed_beta, kernels.alpha_rows_step)
    fit = fit or BatchFit(data, config)  # a sharded fit runs its item passes elsewhere
    phase = PHASE_FIXED if config.sigma_b == 0.0 else PHASE_WARM
    result = BatchResult(model=fit.model, q=fit.q, b=fit.b, used_slots=int(fit.used.sum()))
    previous = None
    for iteration in range(1, max_iters + 1):
        full = phase == PHASE_FULL
        if iteration > 1:
            fit.m_step(full)
        objective = fit.e_step(full)
        result.objective.append(objective)
        result.iterations = iteration
        if report is not None:
            report(iteration, objective, phase, fit.q)
        settled = previous is not None and abs(objective - previous) <= tol * abs(objective)
        previous = objective
        if settled:
            if phase != PHASE_WARM:
                result.converged = True
                break
            phase = PHASE_FULL
            previous = None  # the first full pass starts where the warm phase stopped
    fit.finish()
    fit.model.theta = fit.theta
    fit.model.t = data.n_items
    if phase == PHASE_FIXED and not config.symmetric and fit.label_sums is not None:
        # online EM continues from these statistics (crowd/online.py): the final E-step's
        model = fit.model
        model.stats = np.ascontiguousarray(fit.label_sums.reshape(model.stats.shape))
        model.class_mass = fit.class_mass.copy()
        model.stamp[fit.used] = data.n_items
    result.seconds = time.perf_counter() - started
    return result


def hypermean_step(model: CrowdModel, used: np.ndarray) -> None:
    """SPEC §E.3 step 3 over the used slots; slots without data take the new mu."""
    c = model.config
    if c.sigma_mu > 0.0:
        inv_alpha = 1.0 / c.sigma_alpha ** 2
        inv_mu = 1.0 / c.sigma_mu ** 2
        total = model.alpha[used].sum(axis=0)
        model.mu = (model.nu * inv_mu + total * inv_alpha) / (inv_mu + used.sum() * inv_alpha)
    if not used.all():
        model.alpha[~used] = model.mu
