"""Seeded synthetic rater-task data: what the benchmarks and tests learn from.

Each task has a hidden true class; each rater answers through a confusion matrix whose diagonal
(the rater's accuracy) is drawn uniformly and whose errors are class-dependent; rater activity
is skewed (log-normal), tasks are drawn uniformly.  One line per rating::

    <label> |rater r_<rater> |task t_<task>

with labels ``1..K`` (or ``-1``/``1`` for a binary set).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RaterTaskData:
    labels: np.ndarray  # 0..K-1 per rating
    raters: np.ndarray
    tasks: np.ndarray
    truth: np.ndarray  # true class per task
    classes: int

    def vw_lines(self, binary: bool = False) -> list[str]:
        if binary:
            if self.classes != 2:
                raise ValueError("binary labels need exactly two classes")
            text = np.where(self.labels == 1, "1", "-1")
        else:
            text = (self.labels + 1).astype(str)
        return [f"{label} |rater r_{rater} |task t_{task}"
                for label, rater, task in zip(text.tolist(), self.raters.tolist(),
                                              self.tasks.tolist())]


def rater_task(n_ratings: int = 1_000_000, n_raters: int = 2_000, n_tasks: int = 100_000,
               classes: int = 5, seed: int = 12345, accuracy: tuple[float, float] = (0.45, 0.95)
               ) -> RaterTaskData:
    rng = np.random.default_rng(seed)
    class_prior = rng.dirichlet(np.full(classes, 5.0))
    truth = rng.choice(classes, size=n_tasks, p=class_prior)
    skill = rng.uniform(accuracy[0], accuracy[1], size=n_raters)
    confusion = np.zeros((n_raters, classes, classes))
    for true_class in range(classes):
        others = [c for c in range(classes) if c != true_class]
        if others:
            mistakes = rng.dirichlet(np.full(len(others), 0.7), size=n_raters)
            confusion[:, true_class, others] = mistakes * (1.0 - skill)[:, None]
        confusion[:, true_class, true_class] = skill if others else 1.0
    activity = rng.lognormal(0.0, 1.0, size=n_raters)
    raters = rng.choice(n_raters, size=n_ratings, p=activity / activity.sum())
    tasks = rng.integers(0, n_tasks, size=n_ratings)
    cumulative = confusion[raters, truth[tasks], :].cumsum(axis=1)
    labels = np.minimum((rng.random(n_ratings)[:, None] > cumulative).sum(axis=1), classes - 1)
    return RaterTaskData(labels=labels, raters=raters, tasks=tasks, truth=truth, classes=classes)


def write_vw(path: str, data: RaterTaskData, binary: bool = False, chunk: int = 200_000) -> None:
    with open(path, "w") as handle:
        lines = data.vw_lines(binary)
        for start in range(0, len(lines), chunk):
            handle.write("\n".join(lines[start:start + chunk]) + "\n")
