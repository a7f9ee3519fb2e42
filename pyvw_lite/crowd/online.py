"""Online EM (SPEC §E.4, seed 000) with the lazy hyperprior catch-up (SPEC §E.6, seed 001).

Items are processed in stream order, in chunks handed whole to one kernel call; each item costs
time proportional to its own ratings, whatever the size of the worker table.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..io.crowd_input import CrowdData
from ..jit import announce_compile
from . import kernels
from .model import CrowdModel

CHUNK_ITEMS = 1 << 16


@dataclass
class OnlineResult:
    q: np.ndarray  # posteriors of the last pass, items x K
    b: np.ndarray
    f: np.ndarray  # progressive F-hat_i / n_i of the last pass
    passes: int
    seconds: float


def run_online(data: CrowdData, model: CrowdModel, *, passes: int = 1, test_only: bool = False,
               report=None) -> OnlineResult:
    """Stream ``data`` through ``model`` ``passes`` times (``t`` keeps growing across passes).

    ``report(first_item, f, labels)`` receives each chunk's progressive values and predictions.
    """
    started = time.perf_counter()
    config = model.config
    K = config.n_labels
    if data.n_labels != K:
        raise ValueError(f"the data has {data.n_labels} labels but the model {K}")
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
    mu_share = model.mu_share()
    t_before = model.t
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
