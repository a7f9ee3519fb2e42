"""``--link identity|logistic``: the link applied to reported predictions (VW's ``scorer``).

The loss is still computed on the raw score; ``logistic`` reports ``1/(1 + e^-score)``.
"""
from __future__ import annotations

import numpy as np

from ..options import Options


def logistic(scores: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * scores))  # 1/(1+e^-s) without overflow


class Scorer:
    def __init__(self, link: str):
        self.link = link
        self.name = f"scorer-{link}"

    def report(self, pred: np.ndarray) -> np.ndarray:
        return logistic(pred) if self.link == "logistic" else pred


def setup(options: Options) -> Scorer:
    return Scorer(options.link)
