"""Online EM in stream order, in chunks handed whole to one kernel call; each item costs time
proportional to its own ratings, whatever the size of the worker table.

With every beta equal and untied rows (``--sigma_b 0``, no ``--symmetric``: the defaults) it is
incremental EM on sufficient statistics (:func:`kernels.incremental_em`): the model keeps, per
worker slot, the posterior mass of each truth over the slot's answers, each item's E-step
replaces that item's earlier contribution, and the M-step is batch EM's, on the slots the item
touched.  So passes over a file climb batch EM's objective and end near its fixed point, with
no step size: issue 38 measured the stochastic-gradient form 0.01-0.27 below batch EM on 7 of
the 21 shared sets, where a step of eta0 (t0 + t)^-0.5 never shrinks fast enough to settle
(sum eta_t^2 diverges at rho = 0.5) and on a small set the class prior's steps overshoot.
An M-step once per block of items, a block being a fraction of the file (``block_fraction``;
batch EM at 1), was measured against the step after every item and not kept.
Otherwise (the difficulty model or tied rows) it is SPEC §E.4's stochastic gradient, with the
lazy hyperprior catch-up of SPEC §E.6 (seeds 000 and 001).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..io.crowd_input import CrowdData
from ..jit import announce_compile
from . import kernels
from .batch import hypermean_step
from .model import CrowdModel

CHUNK_ITEMS = 1 << 16

# run_online's default block_fraction.  After the warm-up, the M-step runs once per block of this
# fraction of the file's items (their E-steps at the block's start parameters), or after every
# item at 0: incremental EM.  1 makes each pass one batch EM iteration.  0 was chosen by leave
# one source out over the 27 shared sets among 0, 0.1, 0.25 and 1 (tests/accuracy/crowd_online_schedule.py; docs/crowd.md)
BLOCK_FRACTION = 0.0


@dataclass
class OnlineResult:
    q: np.ndarray  # posteriors of the last pass, items x K
    b: np.ndarray
    f: np.ndarray  # progressive F-hat_i / n_i of the last pass
    passes: int
    seconds: float


def run_online(data: CrowdData, model: CrowdModel, *, passes: int = 1, test_only: bool = False,
               report=None, block_fraction: float = BLOCK_FRACTION) -> OnlineResult:
    """Stream ``data`` through ``model`` ``passes`` times (``t`` keeps growing across passes).

    ``report(first_item, f, labels)`` receives each chunk's progressive values and predictions.
    ``block_fraction`` (0 to 1) sets incremental EM's M-steps after the warm-up pass: one per
    block of that fraction of the file's items, or one after every item at 0 (the default).
    """
    if not 0.0 <= block_fraction <= 1.0:  # also refuses NaN
        raise ValueError(f"block_fraction {block_fraction}: not between 0 and 1")
    started = time.perf_counter()
    config = model.config
    K = config.n_labels
    if data.n_labels != K:
        raise ValueError(f"the data has {data.n_labels} labels but the model {K}")
    if incremental(config):
        announce_compile(kernels.incremental_em, kernels.alpha_rows_step)
    else:
        announce_compile(kernels.online_em)
    rating_slot = model.slots_for(data, grow=not test_only)
    model.check_arrays()  # the kernels index alpha, stamp and theta by these slots and by K
    if rating_slot.size and rating_slot.max() >= model.n_slots:
        raise ValueError(f"worker slot {rating_slot.max()} beyond the model's {model.n_slots}")
    alpha = model.alpha
    if (rating_slot < 0).any():  # unseen workers of an exact map in test-only mode sit at nu
        alpha = np.concatenate([alpha, model.nu[None]], axis=0)
        rating_slot = np.where(rating_slot < 0, model.n_slots, rating_slot)
    stamp = model.stamp if alpha is model.alpha else np.append(model.stamp, 0)
    n_items = float(config.n_items or data.n_items)
    theta = model.theta
    log_prior = theta - theta.max()
    log_prior -= np.log(np.exp(log_prior).sum())
    q = np.zeros((data.n_items, K))
    b = np.zeros(data.n_items)
    f = np.zeros(data.n_items)
    t_before = model.t
    if incremental(config):
        _run_incremental(data, model, rating_slot, alpha, stamp, passes, test_only, report, q, f,
                         block_fraction)
        return OnlineResult(q=q, b=b, f=f, passes=passes, seconds=time.perf_counter() - started)
    mu_share = model.mu_share()
    for _ in range(passes):
        for first in range(0, data.n_items, CHUNK_ITEMS):
            last = min(first + CHUNK_ITEMS, data.n_items)
            model.t = kernels.online_em(
                alpha, model.mu, stamp, model.t, data.item_start[first:last + 1], rating_slot,
                data.rating_label, data.gold[first:last], log_prior, theta, config.learn_priorz,
                config.log_priorz, config.eta, config.rho, config.initial_t, n_items, config.kappa,
                config.sigma_b, config.sigma_alpha, mu_share, config.symmetric, test_only,
                q[first:last], b[first:last], f[first:last])
            if report is not None:
                report(first, f[first:last], q[first:last].argmax(axis=1))
    if test_only:
        model.t = t_before  # a test-only run leaves the model as it found it
    else:
        kernels.catch_up_all(alpha, model.mu, stamp, model.t, config.eta, config.rho,
                             config.initial_t, n_items, config.sigma_alpha, mu_share,
                             config.symmetric)
    return OnlineResult(q=q, b=b, f=f, passes=passes, seconds=time.perf_counter() - started)


def incremental(config) -> bool:
    """Whether online EM runs on sufficient statistics (every beta equal, rows untied)."""
    return config.sigma_b == 0.0 and not config.symmetric


WARM_UP = True
FINISH_ROUNDS = 5  # closing M-steps over every used slot, hypermean and class prior


def _run_incremental(data, model, rating_slot, alpha, stamp, passes, test_only, report, q, f,
                     block_fraction) -> None:
    config = model.config
    for _ in range(passes if not test_only else 1):
        # a fresh model's first pass only gathers statistics, each item's posterior at the prior
        # parameters (where every worker is alike: a vote), then one M-step on all of them:
        # batch EM's start, which steps on the first items' few answers do not find
        warm_up = WARM_UP and model.t == 0 and not test_only
        block = 1 if warm_up or test_only else block_items(data.n_items, block_fraction)
        span = CHUNK_ITEMS if block == 1 else block
        for first in range(0, data.n_items, span):
            last = min(first + span, data.n_items)
            t = kernels.incremental_em(
                alpha, model.mu, model.nu, model.stats, model.class_mass, stamp, model.t,
                data.item_start[first:last + 1], rating_slot, data.rating_label,
                data.gold[first:last], model.theta, config.learn_priorz, config.log_priorz,
                math.exp(config.kappa), config.sigma_alpha, config.sigma_mu, NEWTON_ITERS,
                block == 1 and not warm_up, test_only, q[first:last], f[first:last])
            if not test_only:
                model.t = t
                if block > 1:
                    finish(model, rounds=1)
            if report is not None:
                report(first, f[first:last], q[first:last].argmax(axis=1))
        if warm_up:
            finish(model)
    if not test_only:
        finish(model)


def block_items(n_items: int, fraction: float = BLOCK_FRACTION) -> int:
    """Items per M-step after the warm-up pass (1: a step after every item)."""
    return max(1, int(round(fraction * n_items)))


NEWTON_ITERS = 2  # per row and item: batch EM's row step takes 2 per iteration


def finish(model, rounds: int = FINISH_ROUNDS) -> None:
    """Closing M-steps on the statistics: each used slot's rows (stale where the hypermean
    moved after the slot's last item), the hypermean, the class prior; batch EM's steps."""
    config = model.config
    used = model.stamp > 0
    if not used.any():
        return
    for _ in range(rounds):
        kernels.alpha_rows_step(model.alpha, model.mu, model.stats, used,
                                math.exp(config.kappa), config.sigma_alpha, NEWTON_ITERS, True)
        if config.sigma_mu > 0.0:
            unused = model.alpha[~used].copy()
            hypermean_step(model, used)
            model.alpha[~used] = unused  # online EM leaves unwritten slots at nu
        if config.learn_priorz:
            kernels.theta_newton(model.theta, model.class_mass, float(model.class_mass.sum()),
                                 config.log_priorz, 20)
