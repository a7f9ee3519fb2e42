"""``--method auto``, the ``--batch`` default: BCC, or majority vote where workers are too sparse.

BCC learns a confusion matrix per worker.  That pays where workers answer many items (on the
shared sets whose median answer comes from a worker with 58 answers or more, BCC is above
majority vote on 15 of 19, level on 2 and at most 0.0072 below it on two; 16, 2 and 1 before
majority vote's tie rule) and costs where they answer few:
on the two sets whose median answer comes from a worker with 6 and 7 answers, BCC, EBCC, EM
and one-coin are all 0.013-0.075 below majority vote, because a K x K matrix cannot be learned
from a handful of answers and the prior alone decides.  So the default measures the worker
density, the median over answers of how many answers the answering worker gave, and fits BCC
when it is at least ``sparse_workers`` (20), majority vote below.  One number, one threshold,
chosen by leave-one-dataset-out over the 21 shared sets (``tests/accuracy/crowd_lodo.py``,
docs/crowd.md); the summary prints both and says which way the rule went.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.crowd_input import CrowdData
from .defaults import AUTO_DEFAULTS


def worker_density(data: CrowdData) -> float:
    """The median, over answers, of the number of answers the answering worker gave."""
    if data.n_ratings == 0:
        return 0.0
    per_worker = np.bincount(data.rating_worker, minlength=len(data.worker_names))
    return float(np.median(per_worker[data.rating_worker]))


@dataclass
class Choice:
    method: str  # "bcc" or "majority"
    density: float
    threshold: float

    def reason(self) -> str:
        """One line for the summary: the number, the threshold and the way the rule went."""
        if self.method == "majority":
            return (f"the median answer's worker gave {self.density:g} answers, below "
                    f"{self.threshold:g}: too few to learn a worker's confusion matrix, so "
                    "majority vote")
        return (f"the median answer's worker gave {self.density:g} answers, at least "
                f"{self.threshold:g}: enough to learn each worker's confusion matrix, so BCC")


def choose_default(data: CrowdData, threshold: float = AUTO_DEFAULTS["sparse_workers"]
                   ) -> Choice:
    """The method ``--method auto`` fits to ``data`` (see the module docstring)."""
    density = worker_density(data)
    return Choice("majority" if density < threshold else "bcc", density, threshold)
