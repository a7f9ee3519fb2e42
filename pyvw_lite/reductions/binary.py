"""``--binary``: report the sign of the score and weighted 0/1 loss (VW's ``binary`` reduction).

Learning below is unchanged (it uses the chosen loss function); only what is reported changes.
A label that is not ±1 is reported and keeps the learner's loss, as VW 9.11.9 does.
"""
from __future__ import annotations

import numpy as np

from ..options import Options


class Binary:
    name = "binary"

    @staticmethod
    def report(pred: np.ndarray, labels: np.ndarray, labelled: np.ndarray,
               importances: np.ndarray, loss: np.ndarray) -> tuple[np.ndarray, ...]:
        """(signs, loss, odd): the weighted 0/1 loss of a ±1 label; a label that is not ±1
        keeps the learner's own ``loss`` and is flagged in ``odd`` (VW reports it as an error
        and leaves that example's loss to the base learner)."""
        signs = np.where(pred > 0.0, 1.0, -1.0)
        odd = labelled & (np.abs(labels) != 1.0)
        loss = np.where(odd, loss, np.where(labelled & (signs != labels), importances, 0.0))
        return signs, loss, odd


def setup(options: Options) -> Binary | None:
    return Binary() if options.binary else None
