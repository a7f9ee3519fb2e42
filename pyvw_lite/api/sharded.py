"""Sharded learning from Python: :func:`sharded_learn` trains a Workspace on lines cut into shards,
averaging the shards' models after every pass (the run ``--executor`` makes, without files)."""
from __future__ import annotations

from ..distributed.learn import AVERAGING, combine, line_shards, run_pass
from ..learners.gd import P_ETA
from ..options import shard_options
from ..workspace import Workspace

__all__ = ["sharded_learn"]


def sharded_learn(lines: list[str], argv: list[str], executor, *, passes: int = 1,
                  shards: int | None = None, averaging: str = "adaptive", report=None):
    """Train ``argv``'s learner on ``lines`` split into shards; returns the final Workspace.

    ``report(pass number, workspace)`` is called after each pass's averaging.
    """
    if averaging not in AVERAGING:
        raise ValueError(f"averaging must be one of {', '.join(AVERAGING)}")
    workspace = Workspace(list(argv) + ["--quiet"])
    learner = workspace.learner
    options = shard_options(learner.options)
    handles = [executor.put(shard)
               for shard in line_shards(lines, max(1, shards or executor.workers))]
    for pass_index in range(passes):
        results = run_pass(executor, handles, learner, options, pass_index)
        combine(learner, results, averaging)
        learner.params[P_ETA] *= learner.options.decay_learning_rate
        learner.repeat_pass()  # the next pass repeats the data (and decays the latent rate)
        if report is not None:
            report(pass_index + 1, workspace)
    return workspace
