"""Map-reduce batch EM (SPEC §E.3 over shards of items): each shard runs the E-step of its
items and returns its sufficient statistics (answer sums per slot row, class mass, its part of
F); the driver sums them and takes the M-step.  The sums are the single-machine sums in another
order, so the fit equals single-machine batch EM up to rounding.

Covers the default model (every item's difficulty at kappa, untied rows); the difficulty model
and ``--symmetric`` run on one machine.
"""
from __future__ import annotations

import math

import numpy as np

from ..crowd import kernels
from ..crowd.batch import BatchFit, BatchResult, batch_em
from ..crowd.model import CrowdConfig
from ..io.crowd_input import CrowdData


def shard_e_step(shard: dict, alpha: np.ndarray, kappa: float, log_prior: np.ndarray,
                 want_posteriors: bool):
    """One shard's E-step: (its F-hat sum, answer sums, class mass, posteriors or None)."""
    K = alpha.shape[1]
    q = np.zeros((shard["gold"].size, K))
    table = kernels.log_likelihood_table(alpha, math.exp(kappa))
    items, sums, mass = kernels.batch_items_fixed_beta(
        table.reshape(-1, K), shard["item_start"], shard["rating_row"], K, log_prior,
        shard["gold"], 0.0, q, 1)
    return items, sums, mass, (q if want_posteriors else None)


def shards_of(data: CrowdData, rating_row: np.ndarray, n_shards: int) -> list[tuple[int, dict]]:
    """Contiguous item ranges: (first item, arrays of the shard with its own item offsets)."""
    bounds = np.linspace(0, data.n_items, n_shards + 1).astype(np.int64)
    shards = []
    for first, last in zip(bounds[:-1], bounds[1:]):
        start, end = data.item_start[first], data.item_start[last]
        shards.append((int(first), {"item_start": data.item_start[first:last + 1] - start,
                                    "rating_row": rating_row[start:end].copy(),
                                    "gold": data.gold[first:last].copy()}))
    return shards


class ShardedFit(BatchFit):
    """A batch fit whose item passes run on an executor's shards."""

    def __init__(self, data: CrowdData, config: CrowdConfig, executor, n_shards: int):
        if config.sigma_b > 0.0 or config.symmetric:
            raise ValueError("sharded batch EM covers the default model; run the difficulty model "
                             "(--sigma_b > 0) and --symmetric without --executor")
        super().__init__(data, config)
        self.executor = executor
        pieces = shards_of(data, self.rating_row, max(1, n_shards))
        self.first_items = [first for first, _ in pieces]
        self.handles = [executor.put(shard) for _, shard in pieces]

    def _map(self, want_posteriors: bool):
        args = [(self.model.alpha, self.config.kappa, self.log_prior, want_posteriors)] \
            * len(self.handles)
        return self.executor.map(shard_e_step, self.handles, args)

    def fixed_items_pass(self) -> float:
        results = self._map(False)
        self.label_sums = sum(result[1] for result in results)
        self.class_mass = sum(result[2] for result in results)
        return float(sum(result[0] for result in results))

    def finish(self) -> None:
        for first, result in zip(self.first_items, self._map(True)):
            self.q[first:first + result[3].shape[0]] = result[3]


def sharded_batch_em(data: CrowdData, config: CrowdConfig, executor, *, shards: int | None = None,
                     max_iters: int = 200, tol: float = 1e-6, report=None) -> BatchResult:
    """Batch EM with the item passes on ``executor`` (one shard per worker by default)."""
    fit = ShardedFit(data, config, executor, shards or executor.workers)
    return batch_em(data, config, max_iters=max_iters, tol=tol, report=report, fit=fit)
