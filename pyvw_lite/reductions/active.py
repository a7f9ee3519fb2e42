"""``--active``: disagreement-based active learning (SPEC §C.3-C.4), in simulation (every label
known, ``--simulation``) or label-request mode (unlabelled examples get a request, returned
labels are learned; requests are made under ``-t`` too, as VW makes them).  A model saved by an
active run keeps the sampler's state, so a later run asks with the evidence gathered so far.

The per-example work runs inside the learners' kernels (``learners.gd.reverting_weight_linear``,
``learners.dyadic.query``); this module owns the options, the seeded draws and the state.
For each labelled example the learner computes the reverting weight ``H``: the smallest
importance weight whose exact update would flip the current prediction (``h_min`` of SPEC §C,
with the sensitivity the example would get: VW's stateless ``η·ppu`` for the adaptive learner,
SPEC erratum 2).  The published sampler (erratum 5) turns ``G = H/k`` into a query probability
``P``; one seeded uniform draw per example decides, and a queried example is learned with
importance ``h/P``.  Progress still counts every labelled example.
"""
from __future__ import annotations

import numpy as np

from ..learners.dyadic import REQUEST, SAMPLER_QUERIES, SAMPLER_SIZE, SIMULATION
from ..options import OptionError, Options


class Active:
    def __init__(self, options: Options):
        # --simulation: every label is known, the sampler picks which to learn; otherwise
        # unlabelled examples get a label request (with the importance to learn it with)
        self.mode = SIMULATION if options.simulation else REQUEST
        self.mellowness = options.mellowness
        self.rng = np.random.default_rng(options.random_seed)
        self.sampler = np.zeros(SAMPLER_SIZE)

    def resume(self, saved: list[float]) -> None:
        """Continue a saved model's sampler (weight seen, queried labels, errors, label range);
        the query count starts again, since the summary counts this run's queries."""
        if len(saved) == SAMPLER_SIZE:
            self.sampler[:] = saved
            self.sampler[SAMPLER_QUERIES] = 0.0

    def uniforms(self, count: int) -> np.ndarray:
        """Exactly one draw per example, queried or not (reproducible with --random_seed)."""
        return self.rng.random(count)

    @property
    def requests_labels(self) -> bool:
        return self.mode == REQUEST

    @property
    def queries(self) -> int:
        return int(self.sampler[SAMPLER_QUERIES])


def setup(options: Options) -> Active | None:
    if not options.active:
        if options.simulation:
            raise OptionError("--simulation needs --active")
        return None
    if not options.mellowness > 0.0:  # SPEC §C.4's b = c0·ln(k+1)/k: with c0 ≤ 0, P = 0 always
        raise OptionError(f"option '--mellowness': {options.mellowness:g} must be positive")
    return Active(options)
