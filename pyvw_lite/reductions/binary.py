"""``--binary``: report the sign of the score and weighted 0/1 loss (VW's ``binary`` reduction).

Learning below is unchanged (it uses the chosen loss function); only what is reported changes.
"""
from __future__ import annotations

import numpy as np

from ..options import Options


class Binary:
    name = "binary"

    @staticmethod
    def report(pred: np.ndarray, labels: np.ndarray, labelled: np.ndarray,
               importances: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        signs = np.where(pred > 0.0, 1.0, -1.0)
        loss = np.where(labelled & (signs != labels), importances, 0.0)
        return signs, loss


def setup(options: Options) -> Binary | None:
    return Binary() if options.binary else None
