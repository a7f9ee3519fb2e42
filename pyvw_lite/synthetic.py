"""Seeded synthetic rater-task data: what the benchmarks and tests learn from.

Each task has a hidden true class; each rater answers through a confusion matrix whose diagonal
(the rater's accuracy) is drawn uniformly and whose errors are class-dependent; rater activity
is skewed (log-normal), tasks are drawn uniformly.  One line per rating::

    <label> |rater r_<rater> |task t_<task>

with labels ``1..K`` (or ``-1``/``1`` for a binary set).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .io.atomic import atomic_write, published_together


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
    """The ratings as VW lines (written atomically: a reader never sees half a file)."""
    with atomic_write(path, binary=False) as handle:
        lines = data.vw_lines(binary)
        for start in range(0, len(lines), chunk):
            handle.write("\n".join(lines[start:start + chunk]) + "\n")


@dataclass
class CrowdAnswers:
    tasks: np.ndarray  # task index per answer
    workers: np.ndarray  # worker index per answer
    labels: np.ndarray  # 0..K-1 per answer
    truth: np.ndarray  # true class per task
    classes: int

    def write(self, answers_path: str, truth_path: str | None = None,
              chunk: int = 1 << 14) -> None:
        """crowd-kit's layout: ``task,worker,label`` (and ``task,label`` for the truth), the
        answers ``chunk`` rows at a time (whole-column numpy strings took 3.6 GB at 5,000,000
        answers: fixed-width rows of 67 four-byte characters and three wide column copies)."""
        with published_together(), atomic_write(answers_path, binary=False) as handle:
            handle.write("task,worker,label\n")
            for first in range(0, self.tasks.size, chunk):
                piece = slice(first, first + chunk)
                rows = zip(self.tasks[piece].tolist(), self.workers[piece].tolist(),
                           self.labels[piece].tolist())
                handle.write("".join(f"t{task},w{worker},{label}\n"
                                     for task, worker, label in rows))
            if truth_path:
                with atomic_write(truth_path, binary=False) as truth:
                    truth.write("task,label\n")
                    truth.write("\n".join(f"t{task},{label}"
                                           for task, label in enumerate(self.truth.tolist()))
                                + "\n")


def crowd_answers(n_tasks: int = 100_000, answers_per_task: int = 5, n_workers: int = 2_000,
                  classes: int = 5, seed: int = 12345, spammer_fraction: float = 0.1,
                  accuracy: tuple[float, float] = (0.5, 0.9), hard_fraction: float = 0.2
                  ) -> CrowdAnswers:
    """A Dawid-Skene world with item difficulty: each task gets distinct, activity-weighted workers.

    Honest workers answer through a confusion matrix with a uniform accuracy on the diagonal;
    spammers answer from one fixed distribution whatever the truth; on a hard task (a
    ``hard_fraction`` of them) every answer is uniform with probability one half.
    """
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, classes, size=n_tasks)
    skill = rng.uniform(accuracy[0], accuracy[1], size=n_workers)
    confusion = np.empty((n_workers, classes, classes))
    for true_class in range(classes):
        mistakes = rng.dirichlet(np.ones(classes - 1), size=n_workers) * (1.0 - skill)[:, None]
        confusion[:, true_class, :] = np.insert(mistakes, true_class, skill, axis=1)
    spammers = rng.random(n_workers) < spammer_fraction
    confusion[spammers] = rng.dirichlet(np.full(classes, 0.5), size=int(spammers.sum()))[:, None, :]
    activity = rng.lognormal(0.0, 0.5, size=n_workers)
    workers = _distinct_draws(rng, activity / activity.sum(), n_tasks, answers_per_task)
    tasks = np.repeat(np.arange(n_tasks), answers_per_task)
    workers = workers.ravel()
    rows = confusion[workers, truth[tasks], :]
    hard = np.repeat(rng.random(n_tasks) < hard_fraction, answers_per_task)
    rows = np.where(hard[:, None], 0.5 * rows + 0.5 / classes, rows)
    labels = np.minimum((rng.random(tasks.size)[:, None] > rows.cumsum(axis=1)).sum(axis=1),
                        classes - 1)
    return CrowdAnswers(tasks=tasks, workers=workers, labels=labels, truth=truth, classes=classes)


def _distinct_draws(rng, p: np.ndarray, rows: int, per_row: int) -> np.ndarray:
    """``per_row`` distinct indices per row, drawn with probabilities ``p`` (without replacement)."""
    if per_row > p.size:
        raise ValueError(f"cannot draw {per_row} distinct workers out of {p.size}")
    cumulative = np.cumsum(p)
    out = np.empty((rows, per_row), dtype=np.int64)
    pending = np.arange(rows)
    width = 2 * per_row + 2
    while pending.size:
        draws = np.minimum(np.searchsorted(cumulative, rng.random((pending.size, width)) * cumulative[-1]),
                           p.size - 1)
        ordered = np.sort(draws, axis=1)
        repeated = np.zeros_like(ordered, dtype=bool)
        repeated[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
        ordered[repeated] = p.size  # push repeats to the end
        ordered.sort(axis=1)
        complete = (~repeated).sum(axis=1) >= per_row
        # shuffle within the row so the kept workers are not biased to low indices
        chosen = ordered[complete]
        keys = rng.random(chosen.shape) + (chosen == p.size)
        chosen = np.take_along_axis(chosen, np.argsort(keys, axis=1), axis=1)[:, :per_row]
        out[pending[complete]] = chosen
        pending = pending[~complete]
    return out


@dataclass
class UserItemRatings:
    users: np.ndarray
    items: np.ndarray
    ratings: np.ndarray  # 1..5
    mean: np.ndarray  # the generating model's value before noise and rounding
    base: np.ndarray  # its biases alone: 3.5 + b_u + b_i
    noise_sd: float

    def expected(self, mean: np.ndarray) -> np.ndarray:
        """The expected rounded and clipped rating ``E[clip(round(mean + noise), 1, 5)]``: the
        best prediction under squared loss given ``mean`` (the oracle's, given the model's)."""
        edges = np.array([-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf])
        z = (edges[None, :] - np.asarray(mean)[:, None]) / self.noise_sd
        cdf = 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
        return np.diff(cdf, axis=1) @ np.arange(1, 6)

    def split(self, test_fraction: float, seed: int) -> np.ndarray:
        """A seeded mask of the test ratings (each rating independently, with probability
        ``test_fraction``), from a stream of its own: the ratings do not depend on it."""
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        return rng.random(self.ratings.size) < test_fraction


def user_item_world(n_ratings: int = 1_000_000, n_users: int = 6_040, n_items: int = 3_700,
                    rank: int = 8, latent_sd: float = 0.6, noise_sd: float = 0.8,
                    seed: int = 12345) -> UserItemRatings:
    """The ratings of :func:`user_item_ratings` with the model that generated them."""
    rng = np.random.default_rng(seed)
    p = rng.normal(0.0, 1.0, (n_users, rank))
    q = rng.normal(0.0, 1.0, (n_items, rank))
    scale = latent_sd / np.sqrt(rank)  # p_u·q_i has variance rank·scale² = latent_sd²
    user_bias = rng.normal(0.0, 0.4, n_users)
    item_bias = rng.normal(0.0, 0.5, n_items)
    activity = rng.lognormal(0.0, 1.0, n_users)
    popularity = 1.0 / np.arange(1, n_items + 1) ** 0.9
    popularity = popularity[rng.permutation(n_items)]
    users = rng.choice(n_users, size=n_ratings, p=activity / activity.sum())
    items = rng.choice(n_items, size=n_ratings, p=popularity / popularity.sum())
    _, first = np.unique(users.astype(np.int64) * n_items + items, return_index=True)
    keep = np.sort(first)
    users, items = users[keep], items[keep]
    base = 3.5 + user_bias[users] + item_bias[items]
    mean = base + scale * np.einsum("ij,ij->i", p[users], q[items])
    ratings = np.clip(np.rint(mean + rng.normal(0.0, noise_sd, users.size)), 1, 5).astype(int)
    return UserItemRatings(users=users, items=items, ratings=ratings, mean=mean, base=base,
                           noise_sd=noise_sd)


def user_item_ratings(n_ratings: int = 1_000_000, n_users: int = 6_040, n_items: int = 3_700,
                      rank: int = 8, latent_sd: float = 0.6, noise_sd: float = 0.8,
                      seed: int = 12345) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(users, items, ratings)``: integer ratings 1..5 of a low-rank model with biases,
    ``round(3.5 + b_u + b_i + p_u·q_i + noise)`` with ``p_u·q_i`` of standard deviation
    ``latent_sd``; users' activity is log-normal and items' popularity Zipf-like, and no pair is
    rated twice (a pair drawn again is dropped: popular items and active users collide, so fewer
    than ``n_ratings`` come back)."""
    world = user_item_world(n_ratings, n_users, n_items, rank, latent_sd, noise_sd, seed)
    return world.users, world.items, world.ratings


def write_ratings(path: str, users: np.ndarray, items: np.ndarray, ratings: np.ndarray,
                  chunk: int = 200_000) -> None:
    """VW lines ``<rating> |u u_<user> |m m_<item>`` (the namespaces of VW's movielens demo),
    written atomically."""
    with atomic_write(path, binary=False) as handle:
        for start in range(0, users.size, chunk):
            part = slice(start, start + chunk)
            handle.write("".join(f"{r} |u u_{u} |m m_{i}\n" for r, u, i in zip(
                ratings[part].tolist(), users[part].tolist(), items[part].tolist())))
