"""Sharded online learning with per-pass averaging (VW's allreduce semantics, ECOSYSTEM §1.1):
every pass, each shard's learner starts from the broadcast model, learns its lines once, and the
driver averages the shard models into the next broadcast.

Averaging: ``mean`` (the plain mean of the weights, VW's ``accumulate_avg``) or ``adaptive``
(each shard's update of a weight counts by the squared gradients the shard saw for that weight
this pass; VW weights whole weights by whole accumulators, which halves the update of a weight
only one shard saw).  Accumulators and
counters add up the shards' increments; the label range is the union.  Works for any option set
the Workspace takes (linear, dyadic, every multiclass reduction): the whole weight table and state
travel.
"""
from __future__ import annotations

import numpy as np

from ..learners.gd import G, MAX_LABEL, MIN_LABEL, N, W

AVERAGING = ("mean", "adaptive")


def shard_pass(lines: list[str], argv: list[str], weights: np.ndarray, state: np.ndarray,
               touched: np.ndarray):
    """One pass of one shard from the broadcast model: (weights, state, touched, loss sum)."""
    from ..workspace import Workspace  # imported in the worker: its own numba cache
    workspace = Workspace(argv + ["--quiet"])
    workspace.weights[...] = weights  # copies: the broadcast arrays stay untouched
    workspace.state[...] = state
    workspace.touched[...] = touched
    workspace.learn(lines)
    return workspace.weights, workspace.state, workspace.touched


def average(weights: np.ndarray, state: np.ndarray, results, mode: str):
    """The next broadcast model from the shards' models after one pass."""
    tables = [result[0] for result in results]
    states = [result[1] for result in results]
    new_weights = weights.copy()
    if mode == "adaptive" and weights.shape[1] > G:
        # each shard's update of a weight counts by the squared gradients it saw for it this
        # pass: a weight only one shard touched keeps that shard's whole update
        base = weights[:, W].astype(np.float64)  # differences in float64: exact for float32
        seen = np.stack([np.maximum(table[:, G].astype(np.float64) - weights[:, G], 0.0)
                         for table in tables])
        moved = np.stack([table[:, W].astype(np.float64) - base for table in tables])
        total = seen.sum(axis=0)
        step = np.where(total > 0, (seen * moved).sum(axis=0) / np.where(total > 0, total, 1.0),
                        moved.mean(axis=0))
        new_weights[:, W] = base + step
    else:
        new_weights[:, W] = np.mean([table[:, W] for table in tables], axis=0)
    if weights.shape[1] > G:  # accumulators: the sum of the shards' increments
        gradient_base = weights[:, G].astype(np.float64)
        new_weights[:, G] = gradient_base + sum(table[:, G].astype(np.float64) - gradient_base
                                                for table in tables)
        new_weights[:, N] = np.max([table[:, N] for table in tables], axis=0)
    new_state = state + sum(shard - state for shard in states)
    new_state[MIN_LABEL] = min(shard[MIN_LABEL] for shard in states)
    new_state[MAX_LABEL] = max(shard[MAX_LABEL] for shard in states)
    touched = np.max([result[2] for result in results], axis=0)
    return new_weights, new_state, touched


def sharded_learn(lines: list[str], argv: list[str], executor, *, passes: int = 1,
                  shards: int | None = None, averaging: str = "adaptive", report=None):
    """Train ``argv``'s learner on ``lines`` split into shards; returns the final Workspace."""
    from ..workspace import Workspace
    if averaging not in AVERAGING:
        raise ValueError(f"--averaging must be one of {', '.join(AVERAGING)}")
    workspace = Workspace(argv + ["--quiet"])
    n = max(1, shards or executor.workers)
    bounds = np.linspace(0, len(lines), n + 1).astype(int)
    handles = [executor.put(lines[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    weights, state, touched = workspace.weights, workspace.state, workspace.touched
    for number in range(1, passes + 1):
        results = executor.map(shard_pass, handles, [(argv, weights, state, touched)] * n)
        weights, state, touched = average(weights, state, results, averaging)
        if report is not None:
            report(number, weights, state)
    workspace.weights[...] = weights
    workspace.state[...] = state
    workspace.touched[...] = touched
    return workspace
